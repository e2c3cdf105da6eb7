package store

import (
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
// `ALTER ROLE <wf's role> SET jit = off` on the server instead (README,
// "Production").
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
// does. Such a parameter is then left out of the startup packet and set on
// each new connection instead (SET, through pgxpool's AfterConnect): in
// session mode a client keeps its server session, so the setting holds for
// every statement of the pool, the claims' included. The options parameter
// is set that way when it holds only settings (-c name=value,
// --name=value); other options give the pooler's error.
func ConnectWithoutJIT(ctx context.Context, pcfg *pgxpool.Config) (*pgxpool.Pool, error) {
	DisableJIT(pcfg.ConnConfig)
	var moved []setting
	hooked := false
	for {
		pool, err := PingedPool(ctx, pcfg)
		if err == nil {
			return pool, nil
		}
		name, refused := RefusedStartupParameter(err)
		value, sent := pcfg.ConnConfig.RuntimeParams[name]
		if !refused || !sent {
			return nil, err
		}
		settings := []setting{{name: name, value: value}}
		if name == "options" {
			if settings, err = optionSettings(value); err != nil {
				return nil, fmt.Errorf("error setting the connection's options after connecting, as the pooler refuses them at startup: %w", err)
			}
		}
		delete(pcfg.ConnConfig.RuntimeParams, name)
		if !hooked {
			pcfg.AfterConnect, hooked = setAfterConnect(pcfg.AfterConnect, &moved), true
		}
		moved = append(moved, settings...)
	}
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

// setAfterConnect returns an AfterConnect that sets each of *settings
// (read when a connection is made, so settings added later count) on the
// new connection, then runs next if there is one.
func setAfterConnect(next func(context.Context, *pgx.Conn) error, settings *[]setting) func(context.Context, *pgx.Conn) error {
	return func(ctx context.Context, conn *pgx.Conn) error {
		for _, s := range *settings {
			if _, err := conn.Exec(ctx, `SELECT set_config($1, $2, false)`, s.name, s.value); err != nil {
				return fmt.Errorf("error setting %s after connecting: %w", s.name, err)
			}
		}
		if next != nil {
			return next(ctx, conn)
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
