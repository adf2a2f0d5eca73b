package pgstore_test

import (
	"context"
	"fmt"
	"log"

	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/session/pgstore"
)

// Open connects to a database and migrates the schema; the Store is then used as any
// session.Store. (Not run: it needs a server, e.g. from scripts/postgres.sh start.)
func ExampleOpen() {
	ctx := context.Background()
	st, err := pgstore.Open(ctx, "postgres://dsh@127.0.0.1:55432/postgres?sslmode=disable", pgstore.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	w, err := st.Create(ctx, session.Header{Cwd: "/work/project"})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := w.AppendDurable(session.TurnStart{Turn: 1}.Event()); err != nil {
		log.Fatal(err)
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}
	l, err := st.Load(ctx, w.Header().ID)
	if err != nil {
		log.Fatal(err)
	}
	// An open turn reads back closed as interrupted, as from the file store.
	fmt.Println(len(l.Events), l.Recovered)
}
