package redact

// The detection rules below are taken from gitleaks (github.com/zricethezav/gitleaks/v8,
// config/gitleaks.toml at v8.30.1), Copyright (c) 2019 Zachary Rice, MIT License (see NOTICE): the
// regular expressions, secret groups, entropy thresholds and rule ids are gitleaks' data,
// used unchanged except where a comment says otherwise. dsh does not import gitleaks: the
// module would bring a command-line application's dependencies (viper, cobra, archive
// readers, …) into every dsh binary for a table of patterns. The rule ids are the kinds the
// redaction marker names ("[REDACTED:github-pat]").
//
// Each rule also names its anchors: literal strings, one of which every match contains. The
// scanner looks for the anchors first (with the byte search the runtime vectorizes) and runs
// a rule's expression only around an anchor it found, which keeps ordinary text fast.

// The expressions are kept as text and compiled by each Redactor when a rule's anchor is
// first found (see Redactor.expr): compiling all of them costs a process several
// milliseconds and ~650 KB at start-up, which every dsh process (a Code Mode worker
// included) would pay whether or not it ever redacts a secret. TestRulesCompile compiles
// every one.

// rule is one kind of secret.
type rule struct {
	kind    string // the marker's kind: the gitleaks rule id, or dsh's own
	pattern string // the regular expression of a match; group `group` is the secret
	group   int
	entropy float64  // minimum Shannon entropy of the secret, 0 for none
	anchors []string // case-sensitive literals, one of which is in every match
	// back is how far before an anchor a match may start.
	back int
	// word says the match starts at the anchor and needs a non-word character (or the
	// start of the text) before it, as the expression's leading \b does.
	word bool
	// lines says a match may end only at the end of a line (or of the text): the
	// expression's last repetition may stop inside a line, and that part is given back.
	lines bool
}

var rules = []rule{
	{kind: "aws-access-token", pattern: `\b((?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16})\b`, group: 1, entropy: 3,
		// gitleaks allows keys ending in EXAMPLE (AWS's documentation key); dsh does not,
		// so a key planted as an example is caught too.
		anchors: []string{"A3T", "AKIA", "ASIA", "ABIA", "ACCA"}, word: true},
	{kind: "github-pat", pattern: `ghp_[0-9a-zA-Z]{36}`, entropy: 3, anchors: []string{"ghp_"}},
	{kind: "github-fine-grained-pat", pattern: `github_pat_\w{82}`, entropy: 3, anchors: []string{"github_pat_"}},
	{kind: "github-oauth", pattern: `gho_[0-9a-zA-Z]{36}`, entropy: 3, anchors: []string{"gho_"}},
	{kind: "github-app-token", pattern: `(?:ghu|ghs)_[0-9a-zA-Z]{36}`, entropy: 3, anchors: []string{"ghu_", "ghs_"}},
	{kind: "github-refresh-token", pattern: `ghr_[0-9a-zA-Z]{36}`, entropy: 3, anchors: []string{"ghr_"}},
	{kind: "gitlab-pat-routable", pattern: `\bglpat-[0-9a-zA-Z_-]{27,300}\.[0-9a-z]{2}[0-9a-z]{7}\b`, entropy: 4, anchors: []string{"glpat-"}, word: true},
	{kind: "gitlab-pat", pattern: `glpat-[\w-]{20}`, entropy: 3, anchors: []string{"glpat-"}},
	{kind: "gitlab-deploy-token", pattern: `gldt-[0-9a-zA-Z_\-]{20}`, entropy: 3, anchors: []string{"gldt-"}},
	{kind: "gitlab-runner-authentication-token", pattern: `glrt-[0-9a-zA-Z_\-]{20}`, entropy: 3, anchors: []string{"glrt-"}},
	{kind: "gitlab-ptt", pattern: `glptt-[0-9a-f]{40}`, entropy: 3, anchors: []string{"glptt-"}},
	{kind: "gitlab-rrt", pattern: `GR1348941[\w-]{20}`, entropy: 3, anchors: []string{"GR1348941"}},
	{kind: "gitlab-cicd-job-token", pattern: `glcbt-[0-9a-zA-Z]{1,5}_[0-9a-zA-Z_-]{20}`, entropy: 3, anchors: []string{"glcbt-"}},
	{kind: "gitlab-feed-token", pattern: `glft-[0-9a-zA-Z_\-]{20}`, entropy: 3, anchors: []string{"glft-"}},
	{kind: "gitlab-kubernetes-agent-token", pattern: `glagent-[0-9a-zA-Z_\-]{50}`, entropy: 3, anchors: []string{"glagent-"}},
	{kind: "gitlab-oauth-app-secret", pattern: `gloas-[0-9a-zA-Z_\-]{64}`, entropy: 3, anchors: []string{"gloas-"}},
	{kind: "gitlab-scim-token", pattern: `glsoat-[0-9a-zA-Z_\-]{20}`, entropy: 3, anchors: []string{"glsoat-"}},
	{kind: "gitlab-incoming-mail-token", pattern: `glimt-[0-9a-zA-Z_\-]{25}`, entropy: 3, anchors: []string{"glimt-"}},
	{kind: "slack-bot-token", pattern: `xoxb-[0-9]{10,13}-[0-9]{10,13}[a-zA-Z0-9-]*`, entropy: 3, anchors: []string{"xoxb-"}},
	{kind: "slack-legacy-bot-token", pattern: `xoxb-[0-9]{8,14}-[a-zA-Z0-9]{18,26}`, entropy: 2, anchors: []string{"xoxb-"}},
	{kind: "slack-user-token", pattern: `xox[pe](?:-[0-9]{10,13}){3}-[a-zA-Z0-9-]{28,34}`, entropy: 2, anchors: []string{"xoxp-", "xoxe-"}},
	{kind: "slack-app-token", pattern: `(?i)xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+`, entropy: 2, anchors: []string{"xapp-"}},
	{kind: "slack-config-access-token", pattern: `(?i)xoxe.xox[bp]-\d-[A-Z0-9]{163,166}`, entropy: 2, anchors: []string{"xoxb-", "xoxp-"}, back: len("xoxe.")},
	{kind: "slack-config-refresh-token", pattern: `(?i)xoxe-\d-[A-Z0-9]{146}`, entropy: 2, anchors: []string{"xoxe-"}},
	{kind: "slack-legacy-token", pattern: `xox[os]-\d+-\d+-\d+-[a-fA-F\d]+`, entropy: 2, anchors: []string{"xoxo-", "xoxs-"}},
	{kind: "slack-legacy-workspace-token", pattern: `xox[ar]-(?:\d-)?[0-9a-zA-Z]{8,48}`, entropy: 2, anchors: []string{"xoxa-", "xoxr-"}},
	{kind: "slack-webhook-url", pattern: `(?:https?://)?hooks.slack.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{43,56}`, anchors: []string{"hooks.slack.com/"}, back: len("https://")},
	{kind: "openai-api-key", pattern: `\b(sk-(?:proj|svcacct|admin)-(?:[A-Za-z0-9_-]{74}|[A-Za-z0-9_-]{58})T3BlbkFJ(?:[A-Za-z0-9_-]{74}|[A-Za-z0-9_-]{58})\b|sk-[a-zA-Z0-9]{20}T3BlbkFJ[a-zA-Z0-9]{20})(?:[\x60'"\s;]|\\[nr]|$)`, group: 1, entropy: 3,
		anchors: []string{"T3BlbkFJ"}, back: len("sk-svcacct-") + 74},
	{kind: "anthropic-api-key", pattern: `\b(sk-ant-api03-[a-zA-Z0-9_\-]{93}AA)(?:[\x60'"\s;]|\\[nr]|$)`, group: 1, anchors: []string{"sk-ant-api03-"}, word: true},
	{kind: "anthropic-admin-api-key", pattern: `\b(sk-ant-admin01-[a-zA-Z0-9_\-]{93}AA)(?:[\x60'"\s;]|\\[nr]|$)`, group: 1, anchors: []string{"sk-ant-admin01-"}, word: true},
	// dsh's own rule (gitleaks has none): DeepSeek API keys are "sk-" and 32 lowercase hex
	// digits; the surrounding boundaries keep it off longer keys of other services.
	{kind: "deepseek-api-key", pattern: `\b(sk-[0-9a-f]{32})(?:[^0-9A-Za-z_-]|$)`, group: 1, entropy: 3, anchors: []string{"sk-"}, word: true},
	{kind: "jwt", pattern: `\b(ey[a-zA-Z0-9]{17,}\.ey[a-zA-Z0-9\/\\_-]{17,}\.(?:[a-zA-Z0-9\/\\_-]{10,}={0,2})?)(?:[\x60'"\s;]|\\[nr]|$)`, group: 1, entropy: 3,
		// gitleaks' keyword is "ey"; every JSON Web Token starts with the base64 of `{"`.
		anchors: []string{"eyJ"}, word: true},
	// gitleaks' private-key rule needs the whole block; dsh asks for its END line by name
	// ("-----END … KEY-----" where gitleaks has "KEY-----"), so a header whose block was cut
	// short does not reach on to the next key's header. dsh also redacts a key cut short
	// (head -3 id_rsa, an output limit) from its header through the base64 lines that
	// follow, and a header alone.
	{kind: "private-key", pattern: `(?i)-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----[\s\S-]{64,}?-----END[ A-Z0-9_-]{0,100}KEY(?: BLOCK)?-----`, anchors: []string{"-----BEGIN"}},
	{kind: "private-key", pattern: `-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----(?:[ \t]*\r?\n(?:[A-Za-z-]+: [^\r\n]*|[A-Za-z0-9+/=]{16,}|))*`, anchors: []string{"-----BEGIN"}, lines: true},
}
