package spec

import (
	"github.com/wfhq/wf/wftype"
)

// defaultRunnerPriority is the priority of a Runner spec that names none.
const defaultRunnerPriority = 10

// runnerSpec is the shape of a Runner document (pass 1 checked it).
type runnerSpec struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Type        string `json:"type"`
	Priority    *int   `json:"priority"`
}

// cloudRunSpec is the shape of a cloudrun runner's settings.
type cloudRunSpec struct {
	Project string            `json:"project"`
	Region  string            `json:"region"`
	Jobs    map[string]string `json:"jobs"`
}

// compileRunner runs pass 2 over a Runner document.
func (c *checker) compileRunner(d *document) *Runner {
	s := decodeDocument[runnerSpec](c, d)
	r := &Runner{named: d.named(s.Name, s.Description), typ: RunnerType(s.Type), priority: defaultRunnerPriority}
	if s.Priority != nil {
		r.priority = *s.Priority
	}
	if s.Name == string(RunnerBackground) || s.Name == string(RunnerSync) {
		c.fail(d, "/name", "%q is the name of a local runner; choose another", s.Name)
	}
	if r.priority >= LocalRunnerPriority {
		c.fail(d, "/priority", "must be below %d, the priority of the local runners, or the runner is never used; got %d", LocalRunnerPriority, r.priority)
	}
	switch r.typ {
	case RunnerCloudRun:
		var cr cloudRunSpec
		settings, _ := d.lookup("/settings")
		c.decode(d, "/settings", settings, &cr)
		r.cloudRun = CloudRunSettings(cr)
		if len(cr.Jobs) == 0 {
			c.fail(d, "/settings/jobs", "no task type is mapped to a job, so nothing can reach this runner")
		}
		for _, name := range sortedKeys(cr.Jobs) {
			ptr := joinPointer("/settings/jobs", name)
			t, found := c.lookupTaskType(d, ptr, name, true)
			if found && t != nil && t.mode != wftype.ModeAsync {
				c.failKey(d, ptr, "task type %q is %s, but a cloudrun runner runs %s tasks only", name, t.mode, wftype.ModeAsync)
			}
		}
	default:
		c.fail(d, "/type", "unsupported runner type %q", s.Type)
	}
	if d.failed {
		return nil
	}
	return r
}

// checkRunnerTies reports two runners that serve the same task type at the
// same priority: which one runs it would be an accident of naming.
func (c *checker) checkRunnerTies(runners []*Runner) {
	type key struct {
		taskType string
		priority int
	}
	first := map[key]*Runner{}
	for _, r := range runners {
		for _, tt := range r.TaskTypes() {
			k := key{tt, r.priority}
			other, taken := first[k]
			if !taken {
				first[k] = r
				continue
			}
			d := c.declarations[KindRunner][r.name]
			ptr := joinPointer("/settings/jobs", tt)
			c.failKey(d, ptr, "runner %q serves task type %q at the same priority (%d); give one of them another priority", other.name, tt, r.priority)
		}
	}
}
