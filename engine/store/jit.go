package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DisableJIT turns PostgreSQL's JIT compilation off for connections made
// with cc (the jit startup parameter), unless cc already sets it (as a
// parameter of its own, `?jit=…`, or in its options, `options=-c jit=…`).
//
// PostgreSQL compiles a statement when the planner's estimated cost passes
// jit_above_cost (100,000 by default), and compiles it again at every
// execution of a cached plan. The estimates of the claim statements grow
// with the backlog of PENDING tasks (the planner cannot know that a claim
// reads only a batch of them): past a few hundred thousand tasks of one
// type every claim would be compiled, 0.3–1 s for a statement that runs in
// milliseconds. Nothing wf runs on its pool gains from JIT.
//
// A transaction-mode pooler (PgBouncer) refuses startup parameters it does
// not know, so do not call this for a pool that goes through one: set
// `ALTER ROLE <wf's role> SET jit = off` on the server instead
// (docs/operations.md, "Production").
func DisableJIT(cc *pgx.ConnConfig) {
	if _, set := cc.RuntimeParams["jit"]; set {
		return
	}
	if settings, err := optionSettings(cc.RuntimeParams["options"]); err == nil &&
		slices.ContainsFunc(settings, func(s setting) bool { return s.name == "jit" }) {
		return
	}
	if cc.RuntimeParams == nil {
		cc.RuntimeParams = map[string]string{}
	}
	cc.RuntimeParams["jit"] = "off"
}

// ConnectWithoutJIT opens a pool on pcfg whose connections run with JIT off
// (DisableJIT, unless pcfg sets jit itself), and checks that one connection
// succeeds. Every pool wf opens on its own database without a pooler in
// transaction mode goes through here: `wf run`'s, `wf serve`'s and
// `wf bench`'s.
//
// A pooler in session mode, which needs no database.session_url, refuses
// the startup parameters it does not know (PgBouncer: "unsupported startup
// parameter: jit", or "options"), whether wf asks for them or the URL
// does. Such a parameter is then set after connecting instead
// (SetRefusedAfterConnect): in session mode a client keeps its server
// session, so the setting holds for every statement of the pool, the
// claims' included, and for every connection made from the pool's settings
// (pool.Config().ConnConfig: the leader's, presence's).
func ConnectWithoutJIT(ctx context.Context, pcfg *pgxpool.Config) (*pgxpool.Pool, error) {
	DisableJIT(pcfg.ConnConfig)
	for {
		pool, err := PingedPool(ctx, pcfg)
		if err == nil {
			return pool, nil
		}
		if moved, merr := SetRefusedAfterConnect(pcfg.ConnConfig, err); !moved {
			return nil, cmp.Or(merr, err)
		}
	}
}

// ConnectConfig opens one connection on cc as pgx.ConnectConfig does, with
// the fallback of ConnectWithoutJIT: a startup parameter that a
// session-mode pooler refuses is set after connecting instead. It adds no
// jit=off of its own, and it leaves cc as it is; conn.Config() carries the
// move.
func ConnectConfig(ctx context.Context, cc *pgx.ConnConfig) (*pgx.Conn, error) {
	cc = cc.Copy()
	for {
		conn, err := pgx.ConnectConfig(ctx, cc)
		if err == nil {
			return conn, nil
		}
		if moved, merr := SetRefusedAfterConnect(cc, err); !moved {
			return nil, cmp.Or(merr, err)
		}
	}
}

// SetRefusedAfterConnect handles err, a failed connection on cc: when a
// pooler refused a startup parameter that cc sends, it takes the parameter
// out of cc's startup and has each new connection made with cc set it
// instead (set_config, in a hook of cc's pgconn.Config.AfterConnect, which
// every copy of cc carries, so a connection made from a pool's settings
// gets it as the pool's own do), and reports true: connect again. The
// options parameter is moved that way when it holds only settings
// (-c name=value, --name=value); for other options it returns false and an
// error that says so. Any other err: false and no error.
func SetRefusedAfterConnect(cc *pgx.ConnConfig, err error) (bool, error) {
	name, refused := RefusedStartupParameter(err)
	value, sent := cc.RuntimeParams[name]
	if !refused || !sent {
		return false, nil
	}
	settings := []setting{{name: name, value: value}}
	if name == "options" {
		if settings, err = optionSettings(value); err != nil {
			return false, fmt.Errorf("error setting the connection's options after connecting, as the pooler refuses them at startup: %w", err)
		}
	}
	delete(cc.RuntimeParams, name)
	cc.AfterConnect = setAfterConnect(cc.AfterConnect, settings)
	return true, nil
}

// PingedPool opens a pool on pcfg and checks that one connection succeeds.
func PingedPool(ctx context.Context, pcfg *pgxpool.Config) (*pgxpool.Pool, error) {
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, err
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

// setting is one run-time parameter of a session.
type setting struct{ name, value string }

// setAfterConnect returns a pgconn AfterConnect that runs prev if there is
// one, then sets each of settings on the new connection (for the session:
// set_config(…, false)).
func setAfterConnect(prev pgconn.AfterConnectFunc, settings []setting) pgconn.AfterConnectFunc {
	return func(ctx context.Context, conn *pgconn.PgConn) error {
		if prev != nil {
			if err := prev(ctx, conn); err != nil {
				return err
			}
		}
		for _, s := range settings {
			args := [][]byte{[]byte(s.name), []byte(s.value)}
			if err := conn.ExecParams(ctx, `SELECT set_config($1, $2, false)`, args, nil, nil, nil).Read().Err; err != nil {
				return fmt.Errorf("error setting %s after connecting: %w", s.name, err)
			}
		}
		return nil
	}
}

// refusedStartupParameter matches the error of a pooler that refuses a
// startup parameter (PgBouncer: "unsupported startup parameter: jit";
// newer ones name a setting inside options as "… in options: jit").
var refusedStartupParameter = regexp.MustCompile(`unsupported startup parameter( in options)?: ([A-Za-z0-9_.]+)`)

// RefusedStartupParameter reports which startup parameter a pooler refused
// in err, a failed connection, if it did: "options" for a setting inside
// them.
func RefusedStartupParameter(err error) (string, bool) {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return "", false
	}
	m := refusedStartupParameter.FindStringSubmatch(pgErr.Message)
	switch {
	case m == nil:
		return "", false
	case m[1] != "":
		return "options", true
	}
	return m[2], true
}

// optionSettings reads the settings of a connection's options parameter
// (libpq's: words separated by spaces, a backslash keeping the next
// character, each setting as "-c name=value", "-cname=value" or
// "--name=value", dashes in the name read as underscores). Anything else
// in it is an error.
func optionSettings(options string) ([]setting, error) {
	words := optionWords(options)
	var out []setting
	for i := 0; i < len(words); i++ {
		w := words[i]
		var kv string
		switch {
		case w == "-c" && i+1 < len(words):
			i++
			kv = words[i]
		case strings.HasPrefix(w, "--"):
			kv = w[2:]
		case strings.HasPrefix(w, "-c"):
			kv = w[2:]
		default:
			return nil, fmt.Errorf("option %q is not a setting (-c name=value)", w)
		}
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("option %q is not a setting (-c name=value)", w)
		}
		out = append(out, setting{name: strings.ReplaceAll(name, "-", "_"), value: value})
	}
	return out, nil
}

// optionWords splits options as libpq's server does: on unescaped spaces,
// a backslash keeping the character after it.
func optionWords(options string) []string {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(options); i++ {
		c := options[i]
		switch {
		case c == '\\' && i+1 < len(options):
			i++
			w.WriteByte(options[i])
			inWord = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}
