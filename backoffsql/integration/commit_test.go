package integration

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/backoffsql"
	"github.com/jackc/pgx/v5/stdlib"
)

// cutProxy is a TCP proxy in front of PostgreSQL that, when armed, lets the
// next COMMIT through to the server, waits for the server's answer, and then
// closes the client's connection without passing the answer on: the client
// cannot know that the server committed.
type cutProxy struct {
	ln     net.Listener
	target string
	armed  atomic.Bool
	cuts   atomic.Int32
	answer atomic.Value // the command tag the server sent for the cut COMMIT
	wg     sync.WaitGroup
}

func startProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target}
	p.answer.Store("")
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Go(func() { p.handle(c) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		p.wg.Wait()
	})
	return p
}

// readMsg reads one typed protocol message (type byte, int32 length that
// counts itself, payload) and returns it whole.
func readMsg(r *bufio.Reader) ([]byte, error) {
	head := make([]byte, 5)
	if _, err := io.ReadFull(r, head); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(head[1:])
	if n < 4 || n > 1<<26 {
		return nil, errors.New("bad message length " + strconv.Itoa(int(n)))
	}
	msg := make([]byte, 1+n)
	copy(msg, head)
	_, err := io.ReadFull(r, msg[5:])
	return msg, err
}

func (p *cutProxy) handle(client net.Conn) {
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	var once sync.Once
	closeBoth := func() { once.Do(func() { client.Close(); server.Close() }) }
	defer closeBoth()
	var cutting atomic.Bool

	go func() { // server → client
		defer closeBoth()
		r := bufio.NewReader(server)
		for {
			msg, err := readMsg(r)
			if err != nil {
				return
			}
			if cutting.Load() {
				switch msg[0] {
				case 'C': // CommandComplete: the tag, NUL-terminated
					p.answer.Store(string(bytes.TrimRight(msg[5:], "\x00")))
				case 'Z': // ReadyForQuery: the server is done with COMMIT
					p.cuts.Add(1)
					return
				}
				continue
			}
			if _, err := client.Write(msg); err != nil {
				return
			}
		}
	}()

	// client → server: the untyped startup message, then typed messages.
	r := bufio.NewReader(client)
	head := make([]byte, 4)
	if _, err := io.ReadFull(r, head); err != nil {
		return
	}
	startup := make([]byte, binary.BigEndian.Uint32(head))
	copy(startup, head)
	if _, err := io.ReadFull(r, startup[4:]); err != nil {
		return
	}
	if _, err := server.Write(startup); err != nil {
		return
	}
	for {
		msg, err := readMsg(r)
		if err != nil {
			return
		}
		if msg[0] == 'Q' && bytes.EqualFold(bytes.TrimSpace(bytes.TrimRight(msg[5:], "\x00")), []byte("commit")) &&
			p.armed.CompareAndSwap(true, false) {
			cutting.Store(true)
		}
		if _, err := server.Write(msg); err != nil {
			return
		}
	}
}

// TestCommitUnknown provokes an unknown commit outcome for real: the proxy
// passes COMMIT to PostgreSQL, which commits, and cuts the connection before
// the answer reaches the client; with pgx and with lib/pq.
func TestCommitUnknown(t *testing.T) {
	cfg := pgConfig(t)
	direct := openPG(t, cfg)
	proxy := startProxy(t, net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))))
	addr := proxy.ln.Addr().(*net.TCPAddr)
	pcfg := cfg.Copy()
	pcfg.Host, pcfg.Port = "127.0.0.1", uint16(addr.Port)
	pcfg.TLSConfig, pcfg.Fallbacks = nil, nil // the proxy speaks the plain protocol only
	libpq, err := sql.Open("postgres", "postgres://"+cfg.User+"@"+addr.String()+"/"+cfg.Database+"?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []struct {
		name string
		db   *sql.DB
	}{{"pgx", stdlib.OpenDB(*pcfg)}, {"lib/pq", libpq}} {
		t.Run(d.name, func(t *testing.T) {
			defer d.db.Close()
			commitCut(t, d.name, d.db, direct, proxy)
		})
	}
}

// commitCut runs TestCommitUnknown's cases on db, which reaches the server
// through proxy; direct reaches it without.
func commitCut(t *testing.T, name string, db, direct *sql.DB, proxy *cutProxy) {
	table := "cu_" + strings.ReplaceAll(name, "/", "")
	mustExec(t, direct, `DROP TABLE IF EXISTS `+table)
	mustExec(t, direct, `CREATE TABLE `+table+` (id int PRIMARY KEY, note text NOT NULL)`)
	r := &backoff.Retrier{Policy: backoff.Must(backoff.NewExponential(backoff.Config{
		Base: time.Millisecond, Cap: time.Millisecond, MaxAttempts: 5,
	}))}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rows := func(id int) (n int) {
		if err := direct.QueryRow(`SELECT count(*) FROM `+table+` WHERE id = $1`, id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	t.Run("not idempotent: the distinct error, no second run", func(t *testing.T) {
		proxy.armed.Store(true)
		cuts := proxy.cuts.Load()
		runs := 0
		err := backoffsql.RunTx(ctx, db, &backoffsql.Options{Retrier: r}, func(ctx context.Context, tx *sql.Tx) error {
			runs++
			// A plain INSERT: running it twice would fail with 23505 or,
			// with a generated key, apply the work twice.
			_, err := tx.ExecContext(ctx, `INSERT INTO `+table+` VALUES (1, 'once')`)
			return err
		})
		if proxy.cuts.Load() != cuts+1 || proxy.answer.Load() != "COMMIT" {
			t.Fatalf("the proxy did not cut a COMMIT that the server answered (answer %q)", proxy.answer.Load())
		}
		var be *backoff.Error
		if !errors.Is(err, backoffsql.ErrCommitUnknown) || !errors.As(err, &be) || be.Attempts != 1 || runs != 1 {
			t.Fatalf("RunTx = %v after %d runs; want ErrCommitUnknown after 1", err, runs)
		}
		if backoff.Retryable(err) {
			t.Errorf("an outer loop would retry %v", err)
		}
		if n := rows(1); n != 1 {
			t.Errorf("%d rows; want 1: the server did commit", n)
		}
		t.Logf("figures: %s, commit cut after the server committed: RunTx returned %q after %d run", name, err, runs)
	})

	t.Run("idempotent: run again, applied once", func(t *testing.T) {
		proxy.armed.Store(true)
		cuts := proxy.cuts.Load()
		runs := 0
		err := backoffsql.RunTx(ctx, db, &backoffsql.Options{Retrier: r, Idempotent: true}, func(ctx context.Context, tx *sql.Tx) error {
			runs++
			_, err := tx.ExecContext(ctx, `INSERT INTO `+table+` VALUES (2, 'upsert') ON CONFLICT (id) DO NOTHING`)
			return err
		})
		if proxy.cuts.Load() != cuts+1 {
			t.Fatal("the proxy did not cut the COMMIT")
		}
		if err != nil || runs != 2 {
			t.Fatalf("RunTx = %v after %d runs; want nil after 2", err, runs)
		}
		if n := rows(2); n != 1 {
			t.Errorf("%d rows; want 1", n)
		}
		t.Logf("figures: %s, commit cut, Idempotent: the function ran %d times, the row is there once", name, runs)
	})
}
