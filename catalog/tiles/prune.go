package tiles

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/objio"
)

// The tile cache is keyed by content version, so every write to a
// collection leaves the previous version's tiles behind. The Pruner, a
// leader service, deletes them: every Interval it lists the cache's folders
// level by level (tenant schema, catalog, collection, version), then reads
// the registry, and marks as stale
//
//   - a version folder of a registered collection that is not its current
//     content version;
//   - the folder of a collection, or of a catalog, that is no longer
//     registered (deleted collections and catalogs, whatever their versions).
//
// A folder is removed once it has been seen stale for Grace, in two runs at
// least: a reader that read version N-1 just before N was written, or a
// pre-seeding of N-1 still running, finishes in the meantime. A folder that
// becomes live again (a catalog or collection registered again) is
// forgotten. The registry is read after the listing: a folder that was
// listed was created by a writer that had read its version as current
// before, so the registry then knows that version (current, or replaced),
// and the current version's folder is never taken for a stale one. A tile
// written into a stale version's folder after its removal (a slow reader's)
// is found again by a later run. Names that do not follow wf's rules (a
// schema, catalog or collection id, a version UUID) are not wf's and are
// left alone. What the runs remember is lost with the leadership: a new
// leader starts the grace again, so nothing goes earlier, only later.

// Pruner defaults.
const (
	// DefaultPruneInterval is how often the pruner runs.
	DefaultPruneInterval = time.Hour
	// DefaultPruneGrace is how long a folder is seen stale before it goes.
	DefaultPruneGrace = 15 * time.Minute
)

// PrunerConfig configures a Pruner. Zero fields take the defaults noted.
type PrunerConfig struct {
	// Store reads the registry. Required.
	Store *store.Store
	// CacheURL and Objects are the cache's, as in Config.
	CacheURL string
	Objects  *objio.Opener
	// Interval between runs. Default DefaultPruneInterval.
	Interval time.Duration
	// Grace is how long a folder is stale before it is removed. Default
	// DefaultPruneGrace.
	Grace  time.Duration
	Clock  clock.Clock
	Logger *slog.Logger
}

// PruneResult says what one run found and did.
type PruneResult struct {
	// Stale is the folders found stale, removed or not.
	Stale int
	// Removed names the folders removed (cache locations); Objects counts
	// the tiles that went with them.
	Removed []string
	Objects int
}

// Pruner deletes the tile cache's stale folders. Run it on one instance
// (the leader); RunOnce is not safe for concurrent use.
type Pruner struct {
	cfg PrunerConfig
	svc *Service
	log *slog.Logger
	// staleSince is when each stale folder was first seen stale.
	staleSince map[string]time.Time
}

// NewPruner fills defaults, validates cfg and returns a Pruner.
func NewPruner(cfg PrunerConfig) (*Pruner, error) {
	svc, err := New(Config{Store: cfg.Store, CacheURL: cfg.CacheURL, Objects: cfg.Objects})
	if err != nil {
		return nil, fmt.Errorf("error creating the tile cache pruner: %w", err)
	}
	cfg.CacheURL, cfg.Objects = svc.cfg.CacheURL, svc.cfg.Objects
	cfg.Interval = cmp.Or(cfg.Interval, DefaultPruneInterval)
	cfg.Grace = cmp.Or(cfg.Grace, DefaultPruneGrace)
	cfg.Clock = clock.Or(cfg.Clock)
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	if cfg.Interval < 0 || cfg.Grace < 0 {
		return nil, fmt.Errorf("error creating the tile cache pruner: interval %s and grace %s must be positive", cfg.Interval, cfg.Grace)
	}
	return &Pruner{cfg: cfg, svc: svc, log: cfg.Logger.With("component", "tile cache pruner"), staleSince: map[string]time.Time{}}, nil
}

// Run prunes at once and then every Interval until ctx ends (leadership
// lost or shutdown). It is an engine leader service.
func (p *Pruner) Run(ctx context.Context) {
	clock.Repeat(ctx, p.cfg.Clock, p.cfg.Interval, p.log, "pruning the tile cache failed; retrying at the next interval", func(now time.Time) error {
		_, err := p.RunOnce(ctx, now)
		return err
	})
}

// The rules of the cache's folder names, each at most maxFolderName bytes
// (checked apart: a counted repetition such as {0,62} compiles to a program
// ~60 times larger, kept by every wf process).
var (
	schemaNameRE = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
	registryIDRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)
	versionRE    = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
)

// maxFolderName is the longest folder name the cache holds: a schema name
// or registry id (PostgreSQL's identifiers); a version is shorter.
const maxFolderName = 63

// cachedVersion is one version folder found in the cache.
type cachedVersion struct {
	schema, catalog, collection, version string
}

// RunOnce prunes once as of now: it removes the folders seen stale for
// Grace and remembers the others. A failure to list or remove stops the
// run; what was removed stays removed.
func (p *Pruner) RunOnce(ctx context.Context, now time.Time) (PruneResult, error) {
	var res PruneResult
	found, schemas, err := p.list(ctx)
	if err != nil {
		return res, err
	}
	registered, err := p.cfg.Store.RegisteredCollections(ctx, schemas)
	if err != nil {
		return res, err
	}
	catalogs := map[[2]string]bool{}
	current := map[[3]string]string{}
	for _, r := range registered {
		catalogs[[2]string{r.Schema, r.CatalogID}] = true
		if r.CollectionID != "" {
			current[[3]string{r.Schema, r.CatalogID, r.CollectionID}] = r.Version
		}
	}
	stale := map[string]bool{}
	for _, v := range found {
		switch version, live := current[[3]string{v.schema, v.catalog, v.collection}]; {
		case !catalogs[[2]string{v.schema, v.catalog}]:
			stale[p.folder(v.schema, v.catalog)] = true
		case v.collection == "":
			// A registered catalog's empty folder: nothing to judge.
		case !live:
			stale[p.folder(v.schema, v.catalog, v.collection)] = true
		case v.version != "" && v.version != version:
			stale[p.folder(v.schema, v.catalog, v.collection, v.version)] = true
		}
	}
	res.Stale = len(stale)
	for loc := range p.staleSince {
		if !stale[loc] {
			delete(p.staleSince, loc) // live again, or gone
		}
	}
	var errs []error
	for loc := range stale {
		since, seen := p.staleSince[loc]
		if !seen {
			p.staleSince[loc] = now
			continue
		}
		if now.Sub(since) < p.cfg.Grace {
			continue
		}
		n, err := p.cfg.Objects.RemoveAll(ctx, loc)
		res.Objects += n
		if err != nil {
			errs = append(errs, err)
			continue
		}
		delete(p.staleSince, loc)
		res.Removed = append(res.Removed, loc)
	}
	if len(res.Removed) > 0 {
		p.log.InfoContext(ctx, "removed stale tile cache folders", "folders", len(res.Removed), "tiles", res.Objects, "stale", res.Stale)
	}
	if err := errors.Join(errs...); err != nil {
		return res, fmt.Errorf("error pruning the tile cache: %w", err)
	}
	return res, nil
}

// folder returns the cache location of a folder: <cache>/<parts…>.
func (p *Pruner) folder(parts ...string) string {
	return p.svc.cfg.CacheURL + "/" + strings.Join(parts, "/")
}

// list walks the cache's folders down to the versions; a collection or
// catalog folder with nothing below it is listed with empty names below,
// so that its folder is judged too. It returns the schemas seen.
func (p *Pruner) list(ctx context.Context) ([]cachedVersion, []string, error) {
	objs := p.cfg.Objects
	var out []cachedVersion
	var schemas []string
	names := func(loc string, rule *regexp.Regexp) ([]string, error) {
		all, err := objs.Folders(ctx, loc)
		if err != nil {
			return nil, fmt.Errorf("error pruning the tile cache: %w", err)
		}
		kept := all[:0]
		for _, n := range all {
			if len(n) <= maxFolderName && rule.MatchString(n) {
				kept = append(kept, n)
			}
		}
		return kept, nil
	}
	sch, err := names(p.svc.cfg.CacheURL, schemaNameRE)
	if err != nil {
		return nil, nil, err
	}
	for _, s := range sch {
		schemas = append(schemas, s)
		cats, err := names(p.folder(s), registryIDRE)
		if err != nil {
			return nil, nil, err
		}
		for _, c := range cats {
			cols, err := names(p.folder(s, c), registryIDRE)
			if err != nil {
				return nil, nil, err
			}
			if len(cols) == 0 {
				out = append(out, cachedVersion{schema: s, catalog: c})
			}
			for _, k := range cols {
				versions, err := names(p.folder(s, c, k), versionRE)
				if err != nil {
					return nil, nil, err
				}
				if len(versions) == 0 {
					out = append(out, cachedVersion{schema: s, catalog: c, collection: k})
				}
				for _, v := range versions {
					out = append(out, cachedVersion{schema: s, catalog: c, collection: k, version: v})
				}
			}
		}
	}
	return out, schemas, nil
}
