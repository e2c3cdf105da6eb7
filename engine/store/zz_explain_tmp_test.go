package store

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"wf/engine/dbtest"
	"wf/engine/wftype"
)

func explainAll(t *testing.T, pool *pgxpool.Pool, label, sql string, args ...any) {
	ctx := context.Background()
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		conn, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = conn.Exec(ctx, "SET plan_cache_mode = "+mode)
		tx, _ := conn.Begin(ctx)
		// Prepare so generic plans apply.
		name := fmt.Sprintf("x%d", time.Now().UnixNano())
		_, err = tx.Prepare(ctx, name, "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) "+sql)
		if err != nil {
			fmt.Fprintln(os.Stderr, "PREPARE", label, err)
			tx.Rollback(ctx)
			conn.Release()
			continue
		}
		rows, err := tx.Query(ctx, name, args...)
		if err != nil {
			fmt.Fprintln(os.Stderr, "QUERY", label, err)
			tx.Rollback(ctx)
			conn.Release()
			continue
		}
		var b strings.Builder
		for rows.Next() {
			var l string
			rows.Scan(&l)
			b.WriteString(l + "\n")
		}
		rows.Close()
		tx.Rollback(ctx)
		conn.Release()
		fmt.Fprintf(os.Stderr, "===== %s (%s)\n%s\n", label, mode, b.String())
	}
}

func TestZZExplain(t *testing.T) {
	if os.Getenv("WF_EXPLAIN") == "" {
		t.Skip()
	}
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	st := New(pool)
	old := time.Now().UTC().AddDate(0, -4, 0)
	if _, err := st.EnsurePartitions(ctx, old, 8); err != nil {
		t.Fatal(err)
	}
	if err := st.InsertFinishedTasks(ctx, "noop", old, time.Now().UTC().AddDate(0, -1, 0), 1_000_000); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40; i++ {
		batch := make([]NewTask, 5000)
		for j := range batch {
			batch[j] = NewTask{SchemaName: "system", Scope: wftype.ScopeSystem, ExecutionMode: wftype.ModeAsync, TaskType: "noop"}
		}
		if _, err := st.InsertTasks(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, "VACUUM ANALYZE tasks.tasks"); err != nil {
		t.Fatal(err)
	}
	p := ClaimParams{Owner: "w1", Total: 1000, Slots: []ClaimSlot{{Mode: wftype.ModeAsync, TaskType: "noop", Max: 1000, Lease: time.Minute}}}
	args, _ := claimArgs(p)
	if os.Getenv("WF_EXPLAIN_CLAIM") != "" {
		explainAll(t, pool, "claim", claimTasksSQL, args...)
	}
	claimed, err := st.ClaimTasks(ctx, p)
	if err != nil || len(claimed) != 1000 {
		t.Fatal(err, len(claimed))
	}
	{
		n := len(claimed)
		ids := make([][16]byte, n)
		doc := []byte{'{'}
		hb := []byte{'{'}
		lo, hi := IDTime(claimed[0].ID), IDTime(claimed[0].ID)
		for i, c := range claimed {
			ids[i] = c.ID
			ts := IDTime(c.ID)
			if ts.Before(lo) {
				lo = ts
			}
			if ts.After(hi) {
				hi = ts
			}
			if i > 0 {
				doc = append(doc, ',')
				hb = append(hb, ',')
			}
			doc = appendQuotedUUID(doc, c.ID)
			doc = append(doc, `:{"s":"COMPLETED","r":0}`...)
			hb = appendQuotedUUID(hb, c.ID)
			hb = append(hb, `:60`...)
		}
		doc = append(doc, '}')
		hb = append(hb, '}')
		owner := "w1"
		explainAll(t, pool, "finish", finishTasksSQL, doc, ids, nil, &owner, nil, lo, hi, "q", "e")
		explainAll(t, pool, "heartbeat", heartbeatSQL, hb, ids, nil, "w1", lo, hi)
	}
	_ = pgx.Identifier{}
}
