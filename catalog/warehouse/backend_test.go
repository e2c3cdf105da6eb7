package warehouse_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	bq "google.golang.org/api/bigquery/v2"

	"github.com/wfhq/wf/internal/bqfake"
	"github.com/wfhq/wf/internal/livetest"
)

// bqBackend is the BigQuery the dwh_join contracts read: bqfake (fakeBQ)
// or a real project (liveBQ, under make test-live), holding the owners
// rows as dataset.owners.
type bqBackend struct {
	project string
	// endpoint is the fake's URL; "" means Google's, with Application
	// Default Credentials.
	endpoint string
	dataset  string
	// fake is the in-process server, nil on a live project: the tests
	// that page, slow down or fail requests use it, and only they.
	fake *bqfake.Server
}

// ownersFields are the owners table's columns, in BigQuery's types.
var ownersFields = []bqfake.Field{{Name: "pid", Type: "INTEGER"}, {Name: "code", Type: "STRING"},
	{Name: "owner", Type: "STRING"}, {Name: "share", Type: "FLOAT"}}

func fakeBQ(t *testing.T) bqBackend {
	t.Helper()
	fake := bqfake.New()
	t.Cleanup(fake.Close)
	fake.AddTable("proj", "sales", "owners", ownersFields, owners)
	return bqBackend{project: "proj", endpoint: fake.URL, dataset: "sales", fake: fake}
}

// liveBQ creates a dataset unique to the run in the project
// livetest.RequireGCP names, with the owners table and rows (one DML
// INSERT), and deletes it with its contents when the test ends.
func liveBQ(t *testing.T) bqBackend {
	t.Helper()
	live := livetest.RequireGCP(t, false)
	ctx := context.Background()
	svc, err := bq.NewService(ctx)
	require.NoError(t, err)
	dataset := strings.ReplaceAll(livetest.Name("wft"), "-", "_")
	_, err = svc.Datasets.Insert(live.Project, &bq.Dataset{
		DatasetReference: &bq.DatasetReference{ProjectId: live.Project, DatasetId: dataset}, Location: live.Location,
		// A dataset a killed run leaves loses its tables within a day.
		DefaultTableExpirationMs: int64(24 * time.Hour / time.Millisecond),
	}).Context(ctx).Do()
	require.NoError(t, err, "creating live dataset %s", dataset)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := svc.Datasets.Delete(live.Project, dataset).DeleteContents(true).Context(ctx).Do(); err != nil {
			t.Errorf("live cleanup: error deleting dataset %s: %v", dataset, err)
		}
	})
	var cols, values []string
	for _, f := range ownersFields {
		cols = append(cols, f.Name+" "+map[string]string{"INTEGER": "INT64", "STRING": "STRING", "FLOAT": "FLOAT64"}[f.Type])
	}
	for _, row := range owners {
		var vs []string
		for _, v := range row {
			switch v := v.(type) {
			case nil:
				vs = append(vs, "NULL")
			case string:
				vs = append(vs, fmt.Sprintf("'%s'", v))
			default:
				vs = append(vs, fmt.Sprint(v))
			}
		}
		values = append(values, "("+strings.Join(vs, ", ")+")")
	}
	table := "`" + live.Project + "." + dataset + ".owners`"
	query(t, svc, live, "CREATE TABLE "+table+" ("+strings.Join(cols, ", ")+")")
	query(t, svc, live, "INSERT INTO "+table+" VALUES "+strings.Join(values, ", "))
	return bqBackend{project: live.Project, dataset: dataset}
}

// query runs one GoogleSQL statement on the live project and waits for it.
func query(t *testing.T, svc *bq.Service, live livetest.GCP, sql string) {
	t.Helper()
	ctx := context.Background()
	useLegacy := false
	res, err := svc.Jobs.Query(live.Project, &bq.QueryRequest{Query: sql, UseLegacySql: &useLegacy, Location: live.Location,
		TimeoutMs: 60_000}).Context(ctx).Do()
	require.NoError(t, err, sql)
	done, job := res.JobComplete, res.JobReference
	for !done {
		r, err := svc.Jobs.GetQueryResults(live.Project, job.JobId).Location(job.Location).TimeoutMs(60_000).Context(ctx).Do()
		require.NoError(t, err, sql)
		done = r.JobComplete
	}
}
