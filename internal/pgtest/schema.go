package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Schema returns the name of a schema of t's own on the shared test
// database at dsn: prefix and 8 random hex digits. It does not create it
// (a store's Options.Schema does); it drops it, with everything in it,
// when t ends, so that tests run in parallel on one database.
func Schema(t testing.TB, dsn, prefix string) string {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	schema := prefix + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer func() {
			if err := conn.Close(ctx); err != nil {
				t.Errorf("drop schema %s: %v", schema, err)
			}
		}()
		if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return schema
}

// SearchPathURL is dsn with its search_path set to schema: the store URL
// that selects the schema.
func SearchPathURL(dsn, schema string) string {
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + "search_path=" + schema
}
