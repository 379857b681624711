package storage

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrations are applied in order; migration i brings the schema from version i to i+1.
// They are forward-only: a file is never edited once released, a change is a new file.
var migrations = loadMigrations()

func loadMigrations() []string {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		panic(err) // the pattern is a constant
	}
	sort.Strings(names)
	out := make([]string, 0, len(names))
	for _, n := range names {
		b, err := migrationFiles.ReadFile(n)
		if err != nil {
			panic(err) // embedded at build time
		}
		out = append(out, string(b))
	}
	return out
}

// migrationSteps are Go steps run after a migration's SQL, in the same transaction, for
// data SQL cannot compute; keyed by the version the migration brings the schema to.
var migrationSteps = map[int]func(ctx context.Context, tx *wtx) error{
	2:  backfillPreviews,
	10: rewriteDeltas,
}

// rebuilds are the versions whose migration rebuilds tables other tables reference, so
// it runs with foreign keys off (SQLite's way to change a table's shape) and checks them
// all before it commits.
var rebuilds = map[int]bool{9: true}

// SchemaVersion is the schema version this program writes.
func SchemaVersion() int { return len(migrations) }

// migrate applies every migration above version, each in its own transaction together with
// the user_version bump, so an interrupted migration leaves a consistent earlier version.
func (s *Store) migrate(ctx context.Context, version int) error {
	for v := version; v < len(migrations); v++ {
		if err := s.migrateTo(ctx, v); err != nil {
			return fmt.Errorf("storage: migrate %s to schema version %d: %w", s.path, v+1, err)
		}
	}
	return nil
}

// migrateTo applies migration v (to version v+1).
func (s *Store) migrateTo(ctx context.Context, v int) error {
	if rebuilds[v+1] {
		// The pool holds one writer connection: the pragma applies to the transaction
		// below (it cannot change inside one).
		if _, err := s.w.ExecContext(ctx, "PRAGMA foreign_keys=OFF"); err != nil {
			return err
		}
		defer s.w.ExecContext(context.WithoutCancel(ctx), "PRAGMA foreign_keys=ON")
	}
	return s.write(ctx, func(tx *wtx) error {
		// Another process may have migrated while we waited for the write lock.
		var cur int
		if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&cur); err != nil {
			return err
		}
		if cur > v {
			return nil
		}
		if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
			return err
		}
		if step := migrationSteps[v+1]; step != nil {
			if err := step(ctx, tx); err != nil {
				return err
			}
		}
		if rebuilds[v+1] {
			var table string
			var row sql.NullInt64
			err := tx.QueryRowContext(ctx, "SELECT \"table\", rowid FROM pragma_foreign_key_check LIMIT 1").Scan(&table, &row)
			if err == nil {
				return fmt.Errorf("row %d of %s references a row that does not exist", row.Int64, table)
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		}
		if v == 0 {
			if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id=%d", ApplicationID)); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version=%d", v+1))
		return err
	})
}
