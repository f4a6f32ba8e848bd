package backoffsql

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	modernc "github.com/backoffgo/backoff/backoffsql/internal/fakedrivers/modernc"
	"github.com/backoffgo/backoff/backoffsql/internal/fakedrivers/mysql"
	"github.com/backoffgo/backoff/backoffsql/internal/fakedrivers/pgconn"
)

// userLimitFormats are ER_USER_LIMIT_REACHED (1226) as MariaDB 10.11's
// sql/share/errmsg-utf8.txt gives it in some of the languages lc_messages
// selects: the user, then the resource, which the server names in English
// whatever the language ("max_user_connections", "max_questions", ...).
var userLimitFormats = map[string]string{
	"eng": "User '%-.64s' has exceeded the '%s' resource (current value: %ld)",
	"ger": "Benutzer '%-.64s' hat die Ressourcenbeschränkung '%s' überschritten (aktueller Wert: %ld)",
	"chi": "用户'%-.64s'已超过'%s'资源（当前值：%ld）",
	"jpn": "ユーザー '%-.64s' はリソースの上限 '%s' に達しました。(現在値: %ld)",
	"swe": "Användare '%-.64s' har överskridit '%s' (nuvarande värde: %ld)",
}

// TestClassOfUserLimit: 1226 is Transient exactly when the resource it
// names is max_user_connections, in every language and whatever the
// user's name, a name that reads as a resource included; a message that
// quotes no resource is Rejected.
func TestClassOfUserLimit(t *testing.T) {
	for _, format := range userLimitFormats {
		format = strings.NewReplacer("%-.64s", "%s", "%ld", "%d").Replace(format)
		for _, user := range []string{"app", "max_user_connections", "max_questions"} {
			for resource, want := range map[string]Class{
				"max_user_connections":     Transient,
				"max_questions":            Rejected,
				"max_updates":              Rejected,
				"max_connections_per_hour": Rejected,
				"max_queries_per_hour":     Rejected, // MariaDB's names of the two above
				"max_updates_per_hour":     Rejected,
			} {
				msg := fmt.Sprintf(format, user, resource, 2)
				if got := ClassOf(&mysql.MySQLError{Number: 1226, Message: msg}); got != want {
					t.Errorf("ClassOf(1226 %q) = %v; want %v", msg, got, want)
				}
			}
		}
	}
	// As MariaDB 10.11 with lc_messages=de_DE sent them.
	for msg, want := range map[string]Class{
		"Benutzer 'one' hat die Ressourcenbeschränkung 'max_user_connections' überschritten (aktueller Wert: 1)":                  Transient,
		"Benutzer 'max_user_connections' hat die Ressourcenbeschränkung 'max_queries_per_hour' überschritten (aktueller Wert: 1)": Rejected,
		"Benutzer 'u2' hat die Ressourcenbeschränkung 'max_updates_per_hour' überschritten (aktueller Wert: 1)":                   Rejected,
		"Benutzer 'u3' hat die Ressourcenbeschränkung 'max_connections_per_hour' überschritten (aktueller Wert: 1)":               Rejected,
	} {
		if got := ClassOf(&mysql.MySQLError{Number: 1226, Message: msg}); got != want {
			t.Errorf("ClassOf(1226 %q) = %v; want %v", msg, got, want)
		}
	}
	for _, msg := range []string{"", "max_user_connections", "max_user_connections'", "'max_user_connections"} {
		if got := ClassOf(&mysql.MySQLError{Number: 1226, Message: msg}); got != Rejected {
			t.Errorf("ClassOf(1226 %q) = %v; want Rejected (no resource quoted)", msg, got)
		}
	}
}

// TestDocTableRows reads the classification table of doc.go, row by row
// (the columns Database, Code and Class, where the header puts them, a row
// continuing on lines whose Database column is blank), and checks every code
// it names for PostgreSQL, SQLite and MySQL against ClassOf; the rows for
// "other" codes are TestClassOfPostgres's and TestClassOfMySQL's.
func TestDocTableRows(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ db, codes, class string }
	var rows []row
	codeCol, classCol := -1, -1
	for _, line := range strings.Split(string(src), "\n") {
		text, ok := strings.CutPrefix(line, "//\t")
		switch {
		case ok && strings.HasPrefix(text, "Database    Code"):
			codeCol, classCol = strings.Index(text, "Code"), strings.Index(text, "Class")
			continue
		case codeCol < 0:
			continue
		case !ok:
			codeCol = -1
			continue
		}
		text += strings.Repeat(" ", classCol)
		db, codes, class := strings.TrimSpace(text[:codeCol]), text[codeCol:classCol], strings.TrimSpace(text[classCol:])
		if db != "" {
			rows = append(rows, row{db, codes, class})
		} else if len(rows) > 0 {
			rows[len(rows)-1].codes += " " + codes
		}
	}
	sqlstate := regexp.MustCompile(`\b[0-9A-Z]{5}\b`)
	number := regexp.MustCompile(`\b[0-9]{4}\b`)
	checked := 0
	for _, r := range rows {
		if strings.Contains(r.codes, "other") {
			continue
		}
		var errs []error
		switch r.db {
		case "PostgreSQL":
			for _, code := range sqlstate.FindAllString(r.codes, -1) {
				e := &pgconn.PgError{Severity: "ERROR", Code: code}
				if strings.Contains(r.codes, "RevalidateCachedQuery") {
					e.Routine = "RevalidateCachedQuery"
				}
				errs = append(errs, e)
			}
		case "MySQL":
			for _, n := range number.FindAllString(r.codes, -1) {
				code, _ := strconv.Atoi(n)
				errs = append(errs, &mysql.MySQLError{Number: uint16(code), Message: "User 'app' has exceeded the 'max_user_connections' resource (current value: 2)"})
			}
		case "SQLite":
			code, err := strconv.Atoi(strings.Fields(r.codes)[0])
			if err != nil {
				t.Fatalf("SQLite row %q: %v", r.codes, err)
			}
			errs = append(errs, modernc.New("m", code))
		default:
			continue
		}
		if len(errs) == 0 {
			t.Errorf("%s row %q names no code", r.db, r.codes)
		}
		for _, e := range errs {
			checked++
			if got := ClassOf(e).String(); got != r.class {
				t.Errorf("doc.go's table: %s %+v is %s; ClassOf says %s", r.db, e, r.class, got)
			}
		}
	}
	if checked < 33 { // 15 SQLSTATEs, 4 SQLite codes and 14 MySQL numbers today
		t.Errorf("%d codes checked in doc.go's table; the table has more", checked)
	}
}

// TestLimitedResource: the resource of a 1226 message is its last quoted
// text, wherever it stands, the message's very start included; a message
// with fewer than two quotes names none.
func TestLimitedResource(t *testing.T) {
	for _, tt := range []struct{ message, want string }{
		{"User 'max_user_connections' has exceeded the 'max_questions' resource (current value: 10)", "max_questions"},
		{"'max_user_connections'", "max_user_connections"},
		{"'max_user_connections' resource", "max_user_connections"},
		{"no quotes", ""},
		{"one ' quote", ""},
		{"'", ""},
		{"''", ""},
	} {
		if got := limitedResource(tt.message); got != tt.want {
			t.Errorf("limitedResource(%q) = %q, want %q", tt.message, got, tt.want)
		}
	}
}
