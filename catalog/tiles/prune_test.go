package tiles_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/catalogtest"
	"github.com/wfhq/wf/catalog/tiles"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/gcptest"
	"github.com/wfhq/wf/internal/objio"
)

// testCache is a tile cache under test: its URL, its opener, and how many
// tiles it holds under a folder (a path below the URL).
type testCache struct {
	url     string
	objects *objio.Opener
	count   func(t *testing.T, folder string) int
	// put writes a file that is not a tile of wf's at a path below the URL.
	put func(t *testing.T, name string)
}

func fileCache(t *testing.T) testCache {
	dir := t.TempDir()
	return testCache{
		url: "file://" + dir, objects: objio.New(objio.Config{}),
		count: func(t *testing.T, folder string) int {
			n := 0
			err := filepath.WalkDir(filepath.Join(dir, folder), func(_ string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					n++
				}
				return err
			})
			if os.IsNotExist(err) {
				return 0
			}
			require.NoError(t, err)
			return n
		},
		put: func(t *testing.T, name string) {
			p := filepath.Join(dir, name)
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, []byte("x"), 0o644))
		},
	}
}

func gcsCache(t *testing.T) testCache {
	srv := gcptest.NewFakeGCS(t, "tiles")
	return testCache{
		url: "gs://tiles/wf", objects: objio.New(objio.Config{GCSEndpoint: srv.URL() + "/storage/v1/"}),
		count: func(t *testing.T, folder string) int {
			objs, err := srv.ListObjectsWithOptionsPaginated("tiles", fakestorage.ListOptions{Prefix: "wf/" + folder + "/"})
			require.NoError(t, err)
			return len(objs.Objects)
		},
		put: func(t *testing.T, name string) {
			srv.CreateObject(fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: "tiles", Name: "wf/" + name}, Content: []byte("x")})
		},
	}
}

func TestPruneFileCache(t *testing.T) { t.Parallel(); testPrune(t, fileCache(t)) }

func TestPruneGCSCache(t *testing.T) { t.Parallel(); testPrune(t, gcsCache(t)) }

// testPrune: after a collection is written again, the folder of its old
// version goes once it has been stale for the grace, in a later run; the
// current version's tiles and another tenant's stay; a deleted collection's
// and a deleted catalog's folders go too; what is not wf's stays.
func testPrune(t *testing.T, cache testCache) {
	b := setup(t)
	// The other tenant's collection, with the same collection id.
	src := filepath.Join(b.dir, uuid.NewString()+".geojson")
	require.NoError(t, os.WriteFile(src, []byte(places), 0o644))
	catalogtest.Ingest(t, b.store, map[string]any{"catalog_id": "other", "collection_id": "places",
		"source": src, "format": "geojson", "id_attribute": "code"})

	svc, err := tiles.New(tiles.Config{Store: b.store, CacheURL: cache.url, Objects: cache.objects})
	require.NoError(t, err)
	h := tiles.NewHandler(svc)
	old := preseed(t, b, h, map[string]any{"max_zoom": 2})
	require.Positive(t, old.Tiles.Written)
	theirs := preseedWith(t, h, "other", "places", 2)
	require.Positive(t, theirs.Tiles.Written)
	b.load(t, strings.Replace(places, `"name":"ten"`, `"name":"eleven"`, 1))
	cur := preseed(t, b, h, map[string]any{"max_zoom": 2})
	require.NotEqual(t, old.Version, cur.Version)
	cache.put(t, "s_cat/cat/places/not-a-version/0/0/0.mvt")
	cache.put(t, "Not_A_Schema/x.mvt")

	oldFolder := "s_cat/cat/places/" + old.Version
	curFolder := "s_cat/cat/places/" + cur.Version
	theirFolder := "s_other/other/places/" + theirs.Version
	require.EqualValues(t, old.Tiles.Written, cache.count(t, oldFolder))
	count := func() [3]int {
		return [3]int{cache.count(t, oldFolder), cache.count(t, curFolder), cache.count(t, theirFolder)}
	}

	const grace = 10 * time.Minute
	p, err := tiles.NewPruner(tiles.PrunerConfig{Store: b.store, CacheURL: cache.url, Objects: cache.objects, Grace: grace})
	require.NoError(t, err)
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC) // the pruner's clock is the caller's
	res, err := p.RunOnce(b.ctx, start)
	require.NoError(t, err)
	require.Equal(t, 1, res.Stale)
	require.Empty(t, res.Removed, "first seen stale: kept for the grace")
	res, err = p.RunOnce(b.ctx, start.Add(grace-time.Second))
	require.NoError(t, err)
	require.Empty(t, res.Removed, "still inside the grace")
	require.Equal(t, [3]int{int(old.Tiles.Written), int(cur.Tiles.Written), int(theirs.Tiles.Written)}, count())

	res, err = p.RunOnce(b.ctx, start.Add(grace))
	require.NoError(t, err)
	require.Equal(t, []string{cache.url + "/" + oldFolder}, res.Removed)
	require.EqualValues(t, old.Tiles.Written, res.Objects)
	require.Equal(t, [3]int{0, int(cur.Tiles.Written), int(theirs.Tiles.Written)}, count(),
		"the old version is gone, the current one and the other tenant's are whole")
	require.Equal(t, 1, cache.count(t, "s_cat/cat/places/not-a-version"), "not a version folder: not wf's")
	require.Equal(t, 1, cache.count(t, "Not_A_Schema"), "not a schema folder: not wf's")

	// A retry of the pre-seeding is served from the current version's tiles.
	again := preseed(t, b, h, map[string]any{"max_zoom": 2})
	require.Equal(t, cur.Tiles.Written, again.Tiles.Cached)

	// A deleted collection, then a deleted catalog: their folders go.
	_, err = b.store.DeleteCollection(b.ctx, "cat", "places")
	require.NoError(t, err)
	at := start.Add(2 * grace)
	res, err = p.RunOnce(b.ctx, at)
	require.NoError(t, err)
	require.Empty(t, res.Removed)
	res, err = p.RunOnce(b.ctx, at.Add(grace))
	require.NoError(t, err)
	require.Equal(t, []string{cache.url + "/s_cat/cat/places"}, res.Removed)
	require.Zero(t, cache.count(t, "s_cat/cat/places"))
	require.Equal(t, int(theirs.Tiles.Written), cache.count(t, theirFolder), "the other tenant's tiles stay")

	_, _, err = b.store.DeleteCatalog(b.ctx, "other")
	require.NoError(t, err)
	at = at.Add(2 * grace)
	_, err = p.RunOnce(b.ctx, at)
	require.NoError(t, err)
	res, err = p.RunOnce(b.ctx, at.Add(grace))
	require.NoError(t, err)
	require.Equal(t, []string{cache.url + "/s_other/other"}, res.Removed)
	require.Zero(t, cache.count(t, "s_other/other"))
	require.Equal(t, 1, cache.count(t, "Not_A_Schema"))
}

// TestPruneForgetsLiveAgain: a folder stale in one run and live in the next
// (its catalog registered again) is forgotten: it must be stale for the
// whole grace again before it goes.
func TestPruneForgetsLiveAgain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cache := fileCache(t)
	svc, err := tiles.New(tiles.Config{Store: b.store, CacheURL: cache.url})
	require.NoError(t, err)
	out := preseed(t, b, tiles.NewHandler(svc), map[string]any{"max_zoom": 1})
	folder := "s_cat/cat/places/" + out.Version
	require.Positive(t, cache.count(t, folder))

	p, err := tiles.NewPruner(tiles.PrunerConfig{Store: b.store, CacheURL: cache.url, Grace: time.Minute})
	require.NoError(t, err)
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	_, err = p.RunOnce(b.ctx, start)
	require.NoError(t, err)
	_, err = b.store.DeleteCollection(b.ctx, "cat", "places")
	require.NoError(t, err)
	res, err := p.RunOnce(b.ctx, start.Add(time.Second))
	require.NoError(t, err)
	require.Equal(t, 1, res.Stale)
	_, err = b.store.CreateCollection(b.ctx, store.NewCollection{CatalogID: "cat", ID: "places"})
	require.NoError(t, err)
	res, err = p.RunOnce(b.ctx, start.Add(2*time.Second))
	require.NoError(t, err)
	require.Zero(t, res.Stale, "registered again: live, with its table's version")
	_, err = b.store.DeleteCollection(b.ctx, "cat", "places")
	require.NoError(t, err)
	res, err = p.RunOnce(b.ctx, start.Add(time.Minute))
	require.NoError(t, err)
	require.Empty(t, res.Removed, "seen stale again only now")
	require.Positive(t, cache.count(t, folder))
}
