package cli

import (
	"fmt"
	"net/url"
	"os"
	"path"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/urfave/cli/v2"

	"github.com/wfhq/wf/catalog/webhooks"
	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/egress"
)

// minSecretLength is the shortest signing secret `wf webhooks add` accepts.
const minSecretLength = 16

// webhooksCommand is `wf webhooks`: manage the subscribers of catalog
// lifecycle events. Secrets are read from the environment or a file, never
// from the command line, and never printed back.
func webhooksCommand() *cli.Command {
	return &cli.Command{
		Name:  "webhooks",
		Usage: "add, list or remove webhook subscribers of catalog lifecycle events",
		Subcommands: []*cli.Command{
			{
				Name:  "add",
				Usage: "add a subscriber: signed POSTs of the events of the given types",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "url", Required: true, Usage: "the receiver's http(s) `URL`"},
					&cli.StringFlag{Name: "secret-env", Usage: "read the signing secret from environment variable `VAR`"},
					&cli.StringFlag{Name: "secret-file", Usage: "read the signing secret from `FILE` (one trailing newline is dropped)"},
					&cli.StringFlag{Name: "signature", Value: webhooks.SchemeWF, Usage: "how deliveries are signed: wf (X-WF-Signature) or standard (Standard Webhooks: webhook-id, webhook-timestamp, webhook-signature; the secret is whsec_ and base64) (`SCHEME`)"},
					&cli.StringSliceFlag{Name: "event", Required: true, Usage: "an event `TYPE` or glob (catalog.deleted, catalog.*); repeatable"},
					formatFlag(formatText, formatJSON),
				},
				Action: webhooksAdd,
			},
			{
				Name:   "list",
				Usage:  "list the subscribers (secrets show as a fingerprint only)",
				Flags:  []cli.Flag{formatFlag(formatText, formatJSON)},
				Action: databaseAction(accessRead, webhooksList),
			},
			{
				Name:      "remove",
				Usage:     "remove a subscriber (its queued deliveries then fail)",
				ArgsUsage: "ID",
				Action:    webhooksRemove,
			},
		},
	}
}

// webhookSecret reads the secret from --secret-env or --secret-file.
func webhookSecret(c *cli.Context) (string, error) {
	env, file := c.String("secret-env"), c.String("secret-file")
	if (env == "") == (file == "") {
		return "", Usagef("give the signing secret with exactly one of --secret-env VAR or --secret-file FILE " +
			"(never on the command line, where ps would show it)")
	}
	var secret string
	if env != "" {
		v, ok := os.LookupEnv(env)
		if !ok {
			return "", Usagef("--secret-env: environment variable %s is not set", env)
		}
		secret = v
	} else {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", Usagef("--secret-file: %v", err)
		}
		secret = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	}
	if len(secret) < minSecretLength {
		return "", Usagef("the signing secret is %d bytes long; use at least %d (e.g. openssl rand -hex 32)", len(secret), minSecretLength)
	}
	return secret, nil
}

// checkWebhookURL accepts absolute http and https URLs with a host.
func checkWebhookURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Usagef("--url %q: expected an absolute http:// or https:// URL", raw)
	}
	return nil
}

// checkWebhookHost refuses a receiver whose host is, or resolves to, a
// loopback, private, link-local or other special-purpose address that
// outbound.allow does not open: deliveries could not reach it (each
// connection is checked again when it is made).
func checkWebhookHost(c *cli.Context) error {
	cfg, err := loadConfig(c)
	if err != nil {
		return err
	}
	policy, err := egress.NewPolicy(cfg.Outbound.Allow)
	if err != nil {
		return cli.Exit(err.Error(), ExitFailure)
	}
	u, _ := url.Parse(c.String("url")) // checked by checkWebhookURL
	if err := policy.CheckHost(c.Context, u.Hostname()); err != nil {
		return Usagef("--url %s: %v (allow it with outbound.allow)", redactURL(u.String()), err)
	}
	return nil
}

func webhooksAdd(c *cli.Context) error {
	if err := noArguments(c, "webhooks add"); err != nil {
		return err
	}
	// Everything is checked before connecting: a mistake is a usage error.
	format, err := checkFormat(c, formatText, formatJSON)
	if err != nil {
		return err
	}
	if err := checkWebhookURL(c.String("url")); err != nil {
		return err
	}
	types := c.StringSlice("event")
	for _, t := range types {
		if _, err := path.Match(t, ""); err != nil || t == "" || len(t) > 255 {
			return Usagef("--event %q: expected an event type or a glob such as catalog.*", t)
		}
	}
	scheme := c.String("signature")
	if !slices.Contains(webhooks.Schemes, scheme) {
		return Usagef("--signature %q: expected one of %s", scheme, strings.Join(webhooks.Schemes, ", "))
	}
	secret, err := webhookSecret(c)
	if err != nil {
		return err
	}
	if err := webhooks.CheckSecret(scheme, secret); err != nil {
		return Usagef("--signature %s: %v", scheme, err)
	}
	if err := checkWebhookHost(c); err != nil {
		return err
	}
	return databaseActionArgs(accessSchema, func(c *cli.Context, cfg *config.Config, pool *pgxpool.Pool) error {
		keys, err := secretKeys(cfg)
		if err != nil {
			return err
		}
		w, err := store.New(pool).WithSecrets(keys).InsertWebhookSubscriber(c.Context, store.NewWebhookSubscriber{URL: c.String("url"), Secret: secret, EventTypes: types, Signature: scheme})
		if err != nil {
			return storeError(err)
		}
		if format == formatJSON {
			return writeJSON(c.App.Writer, webhookRow(w))
		}
		_, err = fmt.Fprintf(c.App.Writer, "added webhook subscriber %s (%s, %s signature, secret %s) for %s\n",
			w.ID, redactURL(w.URL), w.Signature, webhooks.Fingerprint(w.Secret), strings.Join(w.EventTypes, ", "))
		return outputError(err)
	})(c)
}

// webhookView is a subscriber as wf prints it: no secret, a fingerprint.
type webhookView struct {
	ID                uuid.UUID `json:"subscriber_id"`
	URL               string    `json:"url"`
	EventTypes        []string  `json:"event_types"`
	Signature         string    `json:"signature"`
	SecretFingerprint string    `json:"secret_fingerprint"`
	CreatedAt         time.Time `json:"created_at"`
}

func webhookRow(w store.WebhookSubscriber) webhookView {
	fp := webhooks.Fingerprint(w.Secret)
	if w.Unreadable != nil {
		// Sealed under a key WF_SECRET_KEY does not list: deliveries to
		// it are skipped until the key is configured again.
		fp = "unreadable (key not configured)"
	}
	return webhookView{ID: w.ID, URL: redactURL(w.URL), EventTypes: w.EventTypes, Signature: w.Signature,
		SecretFingerprint: fp, CreatedAt: w.CreatedAt}
}

// redactURL hides a password in a URL's user information.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Redacted()
}

func webhooksList(c *cli.Context, cfg *config.Config, pool *pgxpool.Pool) error {
	format, err := checkFormat(c, formatText, formatJSON)
	if err != nil {
		return err
	}
	keys, err := secretKeys(cfg)
	if err != nil {
		return err
	}
	subs, err := store.New(pool).WithSecrets(keys).ListWebhookSubscribers(c.Context)
	if err != nil {
		return storeError(err)
	}
	rows := make([]webhookView, len(subs))
	for i, w := range subs {
		rows[i] = webhookRow(w)
	}
	if format == formatJSON {
		return writeJSON(c.App.Writer, map[string]any{"subscribers": rows})
	}
	tw := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SUBSCRIBER ID\tURL\tEVENTS\tSIGNATURE\tSECRET\tCREATED")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.URL, strings.Join(r.EventTypes, ","), r.Signature, r.SecretFingerprint, r.CreatedAt.Format(time.RFC3339))
	}
	return outputError(tw.Flush())
}

func webhooksRemove(c *cli.Context) error {
	if c.NArg() != 1 {
		return Usagef("webhooks remove takes one subscriber ID argument, got %d", c.NArg())
	}
	arg := c.Args().First()
	id, lo, hi, err := idOrPrefix(arg, func(s string) (uuid.UUID, error) {
		id, err := uuid.Parse(s)
		if err != nil {
			return uuid.Nil, Usagef("%q is not a subscriber id (a UUID)", s)
		}
		return id, nil
	}, "a subscriber id (a UUID)")
	if err != nil {
		return err
	}
	return databaseActionArgs(accessSchema, func(c *cli.Context, _ *config.Config, pool *pgxpool.Pool) error {
		st := store.New(pool)
		if id == uuid.Nil {
			if id, err = resolvePrefix(c.Context, "subscriber", st.WebhookSubscriberIDsBetween, arg, lo, hi); err != nil {
				return err
			}
		}
		if err := st.DeleteWebhookSubscriber(c.Context, id); err != nil {
			return storeError(err)
		}
		_, err := fmt.Fprintf(c.App.Writer, "removed webhook subscriber %s\n", id)
		return outputError(err)
	})(c)
}
