package redact_test

import (
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/dsh-go/dsh/policy/redact"
)

// Example secrets: shaped like the real ones, valid for no service.
var secrets = map[string]string{
	"aws-access-token":          "AKIAIOSFODNN7EXAMPLE",
	"github-pat":                "ghp_1234567890abcdefghijABCDEFGHIJ123456",
	"github-oauth":              "gho_16C7e42F292c6912E7710c838347Ae178B4a",
	"github-fine-grained-pat":   "github_pat_11ABCDEFG0123456789abc_" + strings.Repeat("aB3dE5gH7j", 4) + "K9mN0pQ2rS4tU6vW8xY",
	"gitlab-pat":                "glpat-AbCdEf1234567890XyZw",
	"slack-bot-token":           "xoxb-1234567890123-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
	"slack-webhook-url":         "https://hooks.slack.com/services/T0ABCDEFG/B0ABCDEFG/" + "AbCdEfGhIjKlMnOpQrStUvWx",
	"openai-api-key":            "sk-proj-" + strings.Repeat("Ab3De6Gh9J", 7) + "Kl2M" + "T3BlbkFJ" + strings.Repeat("Zy8Xw6Vu4T", 7) + "Sr2Q",
	"anthropic-api-key":         "sk-ant-api03-" + strings.Repeat("Ab3De6Gh9J", 9) + "Kl2" + "AA",
	"deepseek-api-key":          "sk-0123456789abcdef0fedcba987654321",
	"jwt":                       "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
	"private-key":               "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAvRkbm6Dd9xAqJv1n3pGzJ9f2X0mFz7b1o8Z2n3R4q5T6u7V8\nw9X0y1Z2a3B4c5D6e7F8g9H0i1J2k3L4m5N6o7P8q9R0s1T2u3V4w5X6y7Z8a9B0\n-----END RSA PRIVATE KEY-----",
	"private-key (header only)": "-----BEGIN OPENSSH PRIVATE KEY-----",
}

func TestKinds(t *testing.T) {
	r := redact.NewRedactor(nil)
	for kind, secret := range secrets {
		t.Run(kind, func(t *testing.T) {
			want := strings.Fields(kind)[0]
			in := "before " + secret + "\nafter"
			got, counts := r.String(in)
			if got != "before "+redact.Marker(want)+"\nafter" {
				t.Errorf("String(%q) = %q", in, got)
			}
			if counts[want] != 1 || counts.Total() != 1 {
				t.Errorf("counts = %v", counts)
			}
		})
	}
}

func TestTruncatedPrivateKey(t *testing.T) {
	r := redact.NewRedactor(nil)
	in := "$ head -3 id_rsa\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAvRkbm6Dd9xAq\nJv1n3pGzJ9f2X0mFz7b1o8Z2n3R4\nred line after\n"
	got, _ := r.String(in)
	if want := "$ head -3 id_rsa\n[REDACTED:private-key]\nred line after\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestNoFalsePositives(t *testing.T) {
	r := redact.NewRedactor([]string{"HOME=/root", "PWD=/work/project", "API_KEY=short", "GITHUB_TOKEN=aaaaaaaaaaaa"})
	for _, in := range []string{
		"-rw-r--r-- 1 user staff 4096 Dec  1 11:45 task-runner.go\n",
		"the disk-usage of AKIA is high; ASIA and ACCA are words\n",
		"sk-short and task-0123456789abcdef0123456789abcdef0 and xsk-0123456789abcdef0123456789abcdef\n",
		"ghp_tooShort gho_ glpat- xoxb- eyJhbGciOi.eyJ\n",
		"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
		"AKIAAAAAAAAAAAAAAAAA (no entropy)\n",
		"/work/project is where PWD points; aaaaaaaaaaaa has too few distinct characters\n",
		ordinary,
	} {
		if got, counts := r.String(in); got != in || counts != nil {
			t.Errorf("String(%q) = %q, %v; want it unchanged", in, got, counts)
		}
	}
}

func TestEnvironmentSecrets(t *testing.T) {
	env := []string{
		"MY_SERVICE_API_KEY=Zx9!vQ2#mL7$",
		"DB_PASSWORD=correct-horse-battery",
		"GITHUB_TOKEN=Zx9!vQ2#mL7$-and-more", // contains the other: redacted whole
		"EDITOR=vim-but-long-enough",         // not named like a secret
		"KEYBOARD_LAYOUT_ID=abcdefgh12",      // KEYBOARD is not KEY
		"BAD_LINE_WITHOUT_EQUALS",
	}
	r := redact.NewRedactor(env)
	in := "k=Zx9!vQ2#mL7$ t=Zx9!vQ2#mL7$-and-more p=correct-horse-battery e=vim-but-long-enough n=abcdefgh12"
	got, counts := r.String(in)
	want := "k=[REDACTED:env:MY_SERVICE_API_KEY] t=[REDACTED:env:GITHUB_TOKEN] p=[REDACTED:env:DB_PASSWORD] e=vim-but-long-enough n=abcdefgh12"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if counts.Total() != 3 {
		t.Errorf("counts %v", counts)
	}
	if kinds := r.EnvKinds(); len(kinds) != 3 {
		t.Errorf("EnvKinds = %v", kinds)
	}
}

func TestSecretName(t *testing.T) {
	for name, want := range map[string]bool{
		"AWS_SECRET_ACCESS_KEY": true, "GITHUB_TOKEN": true, "DB_PASSWORD": true, "api_key": true,
		"DEEPSEEK_API_KEY": true, "PGPASSWORD": false, "PWD": false, "OLDPWD": false, "SSH_AUTH_SOCK": false,
		"HOME": false, "KEYBOARD": false, "MYSQL_PWD": true, "GOOGLE_APPLICATION_CREDENTIALS": true,
	} {
		if got := redact.SecretName(name); got != want {
			t.Errorf("SecretName(%q) = %v, want %v", name, got, want)
		}
	}
}

// checkRedacted asserts what every output must satisfy: no secret it was given survives,
// and redacting again changes nothing.
func checkRedacted(t interface{ Fatalf(string, ...any) }, r *redact.Redactor, in string, given []string) {
	out, _ := r.String(in)
	for _, s := range given {
		if strings.Contains(out, s) {
			t.Fatalf("String(%q) = %q still holds %q", in, out, s)
		}
	}
	if again, counts := r.String(out); again != out || counts != nil {
		t.Fatalf("not idempotent: %q then %q (%v)", out, again, counts)
	}
}

func TestProperties(t *testing.T) {
	r := redact.NewRedactor([]string{"APP_TOKEN=Qw3rty!Uiop9"})
	var all []string
	for _, s := range secrets {
		all = append(all, s)
	}
	all = append(all, "Qw3rty!Uiop9")
	rapid.Check(t, func(t *rapid.T) {
		parts := rapid.SliceOf(rapid.OneOf(
			rapid.SampledFrom(all),
			rapid.SampledFrom([]string{" ", "\n", "-", "_", "a", "\"", "sk-", "AKIA", "ghp_", "eyJ", ".", "-----BEGIN ", "KEY-----", "=", "[REDACTED:", "]"}),
			rapid.StringMatching(`[A-Za-z0-9]{0,12}`),
		)).Draw(t, "parts")
		in := strings.Join(parts, "")
		var given []string
		for _, s := range all {
			// a secret glued to word characters may legitimately not match (\b rules), so
			// only a secret every occurrence of which stands between spaces must be gone
			if strings.Contains(in, " "+s+" ") && strings.Count(in, s) == strings.Count(in, " "+s+" ") {
				given = append(given, s)
			}
		}
		checkRedacted(t, r, in, given)
	})
}

func FuzzRedact(f *testing.F) {
	for _, s := range secrets {
		f.Add("x " + s + " y")
	}
	f.Add(ordinary)
	r := redact.NewRedactor([]string{"APP_TOKEN=Qw3rty!Uiop9"})
	f.Fuzz(func(t *testing.T, in string) {
		var given []string
		for _, s := range append([]string{"Qw3rty!Uiop9"}, secrets["github-pat"], secrets["aws-access-token"]) {
			if strings.Contains(in, " "+s+" ") {
				given = append(given, s)
			}
		}
		checkRedacted(t, r, in, given)
	})
}

// ordinary is 10 KB of typical command output: a listing, test results, source code.
var ordinary = func() string {
	var b strings.Builder
	for i := 0; b.Len() < 10240; i++ {
		b.WriteString("-rw-r--r-- 1 user staff  4096 Dec  1 11:45 internal/cleantext/file_" + strings.Repeat("x", i%7) + ".go\n")
		b.WriteString("ok  \tgithub.com/dsh-go/dsh/policy/redact\t0.412s\tcoverage: 91.2% of statements\n")
		b.WriteString("func (p *Policy) wrap(ctx context.Context, exec *tool.Execution) (*tool.Result, error) {\n")
	}
	return b.String()[:10240]
}()

func BenchmarkRedactor(b *testing.B) {
	r := redact.NewRedactor([]string{"GITHUB_TOKEN=Zx9vQ2mL7pK4", "DB_PASSWORD=correct-horse-battery"})
	b.Run("ordinary10KB", func(b *testing.B) {
		b.SetBytes(int64(len(ordinary)))
		b.ReportAllocs()
		for b.Loop() {
			r.String(ordinary)
		}
	})
	withSecret := ordinary[:5000] + " " + secrets["github-pat"] + " " + ordinary[5000:]
	b.Run("secret10KB", func(b *testing.B) {
		b.SetBytes(int64(len(withSecret)))
		b.ReportAllocs()
		for b.Loop() {
			r.String(withSecret)
		}
	})
	// the worst kind of input: anchors everywhere
	headers := strings.Repeat("-----BEGIN RSA PRIVATE KEY-----\n", 2000)
	b.Run("pemHeaders64KB", func(b *testing.B) {
		b.SetBytes(int64(len(headers)))
		b.ReportAllocs()
		for b.Loop() {
			r.String(headers)
		}
	})
}

// TestManySecrets: every one of many secrets of one kind is redacted (each rule's
// expression runs once over the text, from its first anchor on).
func TestManySecrets(t *testing.T) {
	r := redact.NewRedactor(nil)
	in := strings.Repeat("x AKIAIOSFODNN7EXAMPLE -----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAvRkbm6Dd9xAq\n", 1000)
	out, counts := r.String(in)
	if counts["aws-access-token"] != 1000 || counts["private-key"] != 1000 {
		t.Errorf("counts %v", counts)
	}
	if want := strings.Repeat("x [REDACTED:aws-access-token] [REDACTED:private-key]\n", 1000); out != want {
		t.Errorf("out %.200q", out)
	}
}
