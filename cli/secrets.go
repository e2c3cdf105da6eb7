package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/urfave/cli/v2"

	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/secretbox"
)

// secretsCommand is `wf secrets`: the keys that encrypt the secrets wf
// stores (webhook signing secrets).
func secretsCommand() *cli.Command {
	return &cli.Command{
		Name:  "secrets",
		Usage: "manage the encryption of the secrets wf stores (keys from secrets.keys or " + secretbox.EnvKey + ")",
		Subcommands: []*cli.Command{
			{
				Name: "rotate",
				Usage: "re-encrypt every stored webhook secret under the current key (the first of secrets.keys or " + secretbox.EnvKey +
					"), clear ones included, in one transaction; running it again changes nothing",
				Action: databaseAction(accessSchema, secretsRotate),
			},
		},
	}
}

func secretsRotate(c *cli.Context, cfg *config.Config, pool *pgxpool.Pool) error {
	keys, err := secretKeys(cfg)
	if err != nil {
		return err
	}
	if keys == nil {
		return Usagef("wf secrets rotate needs a key: set secrets.keys in wf.yaml (entries <id>:file:<path> or <id>:<base64 of 32 bytes>) or %s to <id>:<base64 of 32 bytes> (e.g. k1:$(openssl rand -base64 32)), older keys after a comma", secretbox.EnvKey)
	}
	n, err := store.New(pool).WithSecrets(keys).RotateWebhookSecrets(c.Context)
	if err != nil {
		return cli.Exit(err.Error(), ExitFailure)
	}
	_, err = fmt.Fprintf(c.App.Writer, "re-encrypted %d webhook secret(s) under key %s\n", n, keys.Current())
	return outputError(err)
}

// secretKeys reads the keys of secrets.keys (the file, or WF_SECRET_KEY
// over it; config.Load checked them); nil when there are none.
func secretKeys(cfg *config.Config) (*secretbox.Keyring, error) {
	keys, err := secretbox.ParseKeys(cfg.Secrets.Keys, os.ReadFile)
	if err != nil {
		// A key file changed since the configuration was loaded.
		return nil, Usagef("secrets.keys: %v", err)
	}
	return keys, nil
}

// checkSecretKeys refuses to start without keys on a database holding
// encrypted secrets, and warns once when secrets are stored clear.
func checkSecretKeys(ctx context.Context, st *store.Store, keys *secretbox.Keyring, log *slog.Logger) error {
	if keys != nil {
		return nil
	}
	n, err := st.CountSealedWebhookSecrets(ctx)
	if err != nil {
		return err
	}
	if n > 0 {
		return fmt.Errorf("error starting: %d webhook secret(s) in the database are encrypted but no key is configured; set secrets.keys (or %s) to the keys that encrypted them", n, secretbox.EnvKey)
	}
	log.Warn("webhook secrets are stored in clear: set secrets.keys (or " + secretbox.EnvKey + ") to encrypt them, then run wf secrets rotate")
	return nil
}
