package backoffsql

import (
	"fmt"
	"strings"
	"testing"

	"github.com/backoffgo/backoff/backoffsql/internal/fakedrivers/mysql"
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
			} {
				msg := fmt.Sprintf(format, user, resource, 2)
				if got := ClassOf(&mysql.MySQLError{Number: 1226, Message: msg}); got != want {
					t.Errorf("ClassOf(1226 %q) = %v; want %v", msg, got, want)
				}
			}
		}
	}
	for _, msg := range []string{"", "max_user_connections", "max_user_connections'", "'max_user_connections"} {
		if got := ClassOf(&mysql.MySQLError{Number: 1226, Message: msg}); got != Rejected {
			t.Errorf("ClassOf(1226 %q) = %v; want Rejected (no resource quoted)", msg, got)
		}
	}
}
