package api

import (
	"net/http"
	"slices"
	"time"

	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/engine/store"
)

// statsView is the overview (schema Stats).
type statsView struct {
	Now           time.Time          `json:"now"`
	Since         time.Time          `json:"since"`
	PendingAsOf   time.Time          `json:"pending_as_of"`
	Counts        []countView        `json:"counts"`
	Throughput    []throughputView   `json:"throughput"`
	OldestPending []pendingAgeView   `json:"oldest_pending"`
	Instances     []instanceView     `json:"instances,omitempty"`
	Schedules     []scheduleView     `json:"schedules"`
	Outbox        *outboxView        `json:"outbox,omitempty"`
	Estimates     map[string]float64 `json:"estimates,omitempty"`
	Paused        []store.Pause      `json:"paused"`
	Held          []heldView         `json:"held"`
}

type countView struct {
	Status     string `json:"status"`
	TaskType   string `json:"task_type"`
	SchemaName string `json:"schema_name"`
	Count      int64  `json:"count"`
}

type throughputView struct {
	Minute     time.Time `json:"minute"`
	Completed  int64     `json:"completed"`
	Failed     int64     `json:"failed"`
	DeadLetter int64     `json:"dead_letter"`
	Cancelled  int64     `json:"cancelled"`
}

type pendingAgeView struct {
	TaskType    string    `json:"task_type"`
	SchemaName  string    `json:"schema_name"`
	Due         int64     `json:"due"`
	OldestDueAt time.Time `json:"oldest_due_at"`
	AgeSeconds  float64   `json:"age_seconds"`
}

type instanceView struct {
	Service   string    `json:"service"`
	Owner     string    `json:"owner"`
	Role      string    `json:"role"` // engine (wf run) or api (wf serve)
	Leader    bool      `json:"leader"`
	StartedAt time.Time `json:"started_at"`
}

type scheduleView struct {
	Name     string     `json:"name"`
	Cron     string     `json:"cron"`
	Timezone string     `json:"timezone"`
	TaskType string     `json:"task_type"`
	NextTick time.Time  `json:"next_tick"`
	LastTick *time.Time `json:"last_tick,omitempty"`
}

type outboxView struct {
	Pending          int64      `json:"pending"`
	Held             int64      `json:"held"`
	Processing       int64      `json:"processing"`
	DeadLetter       int64      `json:"dead_letter"`
	OldestPendingAt  *time.Time `json:"oldest_pending_at,omitempty"`
	OldestAgeSeconds float64    `json:"oldest_pending_age_seconds"`
}

// getStats answers GET /stats: the dashboard's overview and `wf tasks
// stats`. Counts by status, task type and tenant hold every live (PENDING,
// ACTIVE) and DEAD_LETTER task, and the tasks that finished in the window
// (default 1h, at most 24h); throughput by minute over the window; the
// oldest due PENDING task per type (these two from the PENDING counts
// snapshot, as of pending_as_of); schedules with their next tick; the
// paused task types and tenants (a limited token sees its own tenants'); the
// PENDING tasks held, by reason (heldCounts). Older
// history is never counted: estimates gives its size from the planner's
// statistics. A token limited to catalogs sees only its tenants' tasks and
// schedules, and no instances, outbox or estimates (they span tenants);
// instances are shown to workers and admins only.
func (s *Server) getStats(w http.ResponseWriter, r *http.Request, p *principal) error {
	q, prob := parseQuery(r, []string{"window"}, nil)
	if prob != nil {
		return prob
	}
	window := time.Hour
	if raw := q.get("window"); raw != "" {
		d, err := time.ParseDuration(raw)
		if err != nil || d < time.Minute || d > 24*time.Hour {
			return invalidParameter("window", "must be a duration from 1m to 24h, such as 1h")
		}
		window = d
	}
	sc, err := s.scopeOf(r.Context(), p)
	if err != nil {
		return err
	}
	params := store.OverviewParams{Window: window}
	if !sc.all {
		params.SchemaNames = append([]string{}, sc.schemas...)
	}
	reads := s.laggingReads(w)
	o, err := reads.ReadOverview(r.Context(), params)
	if err != nil && reads != s.store && r.Context().Err() == nil {
		// The replica could not answer (it went away, or the PENDING
		// snapshot was too old and a replica cannot refresh it): the
		// primary answers instead.
		reads = s.store
		w.Header().Set(ReadFromHeader, "primary")
		o, err = reads.ReadOverview(r.Context(), params)
	}
	if err != nil {
		return err
	}
	if reads != s.store {
		// The replica sees none of the primary's sessions: the instances
		// are the primary's.
		if o.Instances, err = s.store.Instances(r.Context()); err != nil {
			return err
		}
	}
	v := statsView{Now: o.Now, Since: o.Since, PendingAsOf: o.PendingAsOf, Counts: []countView{}, Throughput: []throughputView{},
		OldestPending: []pendingAgeView{}, Schedules: []scheduleView{}, Paused: append([]store.Pause{}, o.Paused...)}
	for _, c := range o.Counts {
		v.Counts = append(v.Counts, countView{Status: string(c.Status), TaskType: c.TaskType, SchemaName: c.SchemaName, Count: c.Count})
	}
	for _, b := range o.Throughput {
		v.Throughput = append(v.Throughput, throughputView{Minute: b.Minute, Completed: b.Completed, Failed: b.Failed,
			DeadLetter: b.DeadLetter, Cancelled: b.Cancelled})
	}
	for _, a := range o.OldestPending {
		v.OldestPending = append(v.OldestPending, pendingAgeView{TaskType: a.TaskType, SchemaName: a.SchemaName, Due: a.Due, OldestDueAt: a.OldestDueAt,
			AgeSeconds: max(o.Now.Sub(a.OldestDueAt).Seconds(), 0)})
	}
	if sc.all && p.role != config.RoleClient {
		for _, in := range o.Instances {
			v.Instances = append(v.Instances, instanceView{Service: in.Service, Owner: in.Owner, Role: in.Role, Leader: in.Leader, StartedAt: in.StartedAt})
		}
	}
	last, err := reads.LastTicks(r.Context())
	if err != nil {
		return err
	}
	for _, sch := range s.cfg.Specs.Schedules() {
		if !sc.all && !slices.Contains(sc.schemas, sch.SchemaName()) {
			continue
		}
		sv := scheduleView{Name: sch.Name(), Cron: sch.Cron(), Timezone: sch.Location().String(), TaskType: sch.TaskType(),
			NextTick: sch.Next(o.Now).UTC()}
		if at, ok := last[sch.Name()]; ok {
			sv.LastTick = &at
		}
		v.Schedules = append(v.Schedules, sv)
	}
	if sc.all {
		ob := &outboxView{Pending: o.Outbox.Pending, Held: o.Outbox.Held, Processing: o.Outbox.Processing, DeadLetter: o.Outbox.DeadLetter,
			OldestPendingAt: o.Outbox.OldestPending}
		if ob.OldestPendingAt != nil {
			t := ob.OldestPendingAt.UTC()
			ob.OldestPendingAt, ob.OldestAgeSeconds = &t, max(o.Now.Sub(t).Seconds(), 0)
		}
		v.Outbox = ob
		v.Estimates = map[string]float64{}
		for st, n := range o.Estimates {
			v.Estimates[string(st)] = n
		}
	}
	if v.Held, err = s.heldCounts(r.Context(), o, sc); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}
