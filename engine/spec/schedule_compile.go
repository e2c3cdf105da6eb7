package spec

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/wfhq/wf/wftype"
)

// scheduleSpec is the shape of a Schedule document (pass 1 checked it).
type scheduleSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Cron        string          `json:"cron"`
	Timezone    string          `json:"timezone"`
	TaskType    string          `json:"task_type"`
	Workflow    string          `json:"workflow"`
	SchemaName  string          `json:"schema_name"`
	Inputs      json.RawMessage `json:"inputs"`
	Missed      string          `json:"missed"`
}

// cronParser reads standard 5-field lines and descriptors (@daily, @every 1h).
func cronParser() cron.Parser {
	return cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
}

// compileSchedule runs pass 2 over a Schedule document.
func (c *checker) compileSchedule(d *document) *Schedule {
	s := decodeDocument[scheduleSpec](c, d)
	sch := &Schedule{
		named:      d.named(s.Name, s.Description),
		cronLine:   s.Cron,
		schemaName: s.SchemaName,
		missed:     MissedPolicy(s.Missed),
		location:   time.UTC,
	}
	if sch.schemaName == "" {
		sch.schemaName = wftype.SystemSchema
	}
	if sch.missed == "" {
		sch.missed = MissedSkip
	}
	if s.Timezone != "" {
		sch.location = c.timezone(d, s.Timezone)
	}
	if strings.HasPrefix(s.Cron, "TZ=") || strings.HasPrefix(s.Cron, "CRON_TZ=") {
		c.fail(d, "/cron", "set the time zone with the timezone field, not in the cron line")
	} else if parsed, err := cronParser().Parse(s.Cron); err != nil {
		c.fail(d, "/cron", "%s", explainCron(s.Cron, err))
	} else if neverFires(parsed) {
		c.fail(d, "/cron", "cron line %q never fires: the day of month and the month it names never meet (such as the 30th of February or the 31st of April); pick a day that exists in that month", s.Cron)
	} else {
		sch.cron = parsed
	}
	inputs := s.Inputs
	if len(inputs) == 0 {
		inputs = json.RawMessage(`{}`)
	}
	sch.inputs = inputs
	t, w := c.triggerTarget(d, s.TaskType, s.Workflow)
	if t != nil {
		value, ok := d.lookup("/inputs")
		if !ok {
			value = map[string]any{}
		}
		if doc, err := toJSONValue(value); err != nil {
			c.fail(d, "/inputs", "%v", err)
		} else if err := t.inputs.Validate(doc); err != nil {
			vs, _ := pairMisspelt(violations(err, t.inputsDoc, doc))
			for _, v := range vs {
				c.add(d, v.pointer("/inputs"), d.violationError(v, "/inputs"))
			}
		}
	}
	if d.failed || t == nil {
		return nil
	}
	sch.taskType, sch.workflow = t, w
	return sch
}

// timezone loads an IANA time zone.
func (c *checker) timezone(d *document, name string) *time.Location {
	if name == "Local" {
		c.fail(d, "/timezone", "expected an IANA time zone such as Europe/Rome or UTC; Local depends on the machine")
		return time.UTC
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		c.fail(d, "/timezone", "unknown time zone %q; expected an IANA name such as Europe/Rome or UTC", name)
		return time.UTC
	}
	return loc
}
