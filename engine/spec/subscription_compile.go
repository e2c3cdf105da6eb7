package spec

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
)

// subscriptionSpec is the shape of a Subscription document (pass 1 checked it).
type subscriptionSpec struct {
	Name        string            `json:"name"`
	Description string            `json:"description"`
	EventType   string            `json:"event_type"`
	When        string            `json:"when"`
	TaskType    string            `json:"task_type"`
	Workflow    string            `json:"workflow"`
	Payload     json.RawMessage   `json:"payload"`
	SchemaName  string            `json:"schema_name"`
	Inputs      map[string]string `json:"inputs"`
	DedupKey    string            `json:"dedup_key"`
}

// compileSubscription runs pass 2 over a Subscription document.
func (c *checker) compileSubscription(d *document) *Subscription {
	s := decodeDocument[subscriptionSpec](c, d)
	sub := &Subscription{
		named:      d.named(s.Name, s.Description),
		eventType:  s.EventType,
		glob:       isGlob(s.EventType),
		inputNames: sortedKeys(s.Inputs),
		inputs:     map[string]*program{},
	}
	if sub.glob {
		if _, err := path.Match(s.EventType, ""); err != nil {
			c.fail(d, "/event_type", "invalid glob pattern %q (path.Match syntax: *, ?, [a-z], \\ escapes)", s.EventType)
		}
	}
	var payload any // the payload schema as JSON values, nil if none
	sub.payloadRaw, sub.payload, payload = c.payloadSchema(d, s.Name, s.Payload)
	compile := func(ptr, source string, env any, result resultKind) *program {
		p, err := d.compileExpression(ptr, source, env, result)
		c.failAt(d, ptr, err)
		if p != nil && payload != nil {
			p.checked = c.checkPayloadExpression(d, ptr, source, payload, env, result)
		}
		return p
	}
	if s.When != "" {
		sub.when = compile("/when", s.When, eventEnv{}, resultBool)
	}
	if s.SchemaName != "" {
		sub.schemaName = compile("/schema_name", s.SchemaName, eventEnv{}, resultString)
	} else {
		sub.schemaName, _ = compileProgram(defaultSubscriptionSchemaName, eventEnv{}, resultString)
	}
	for _, name := range sub.inputNames {
		sub.inputs[name] = compile(joinPointer("/inputs", name), s.Inputs[name], eventEnv{}, resultAny)
	}
	if s.DedupKey != "" {
		sub.dedupKey = compile("/dedup_key", s.DedupKey, eventDedupEnv{}, resultString)
	} else {
		sub.dedupKey, _ = compileProgram(defaultSubscriptionDedupKey, eventDedupEnv{}, resultString)
	}
	t, w := c.triggerTarget(d, s.TaskType, s.Workflow)
	if t != nil {
		c.checkMappedInputs(d, "/inputs", t, s.Inputs)
		for _, name := range sub.inputNames {
			if p := sub.inputs[name]; p != nil {
				got := p.resultType()
				if p.checked != nil {
					got = p.checked
				}
				n := len(c.errs)
				c.checkInputType(d, joinPointer("/inputs", name), s.Inputs[name], got, t, name)
				if len(c.errs) == n {
					c.checkInputLiteral(d, joinPointer("/inputs", name), s.Inputs[name], t, name)
				}
			}
		}
	}
	if d.failed || t == nil {
		return nil
	}
	sub.taskType, sub.workflow = t, w
	if w != nil && s.DedupKey == "" {
		sub.dedupKey, _ = compileProgram(defaultWorkflowSubscriptionKey(s.Name), eventDedupEnv{}, resultString)
	}
	return sub
}

// undeclared keeps the names the object schema does not declare as a
// property.
func undeclared(names []string, schema map[string]any) []string {
	props, _ := schema["properties"].(map[string]any)
	var out []string
	for _, n := range names {
		if _, declared := props[n]; !declared {
			out = append(out, n)
		}
	}
	return out
}

// checkMappedInputs compares the inputs a subscription or a workflow step
// maps (at ptr) with what its task type's schema declares: every required
// input must be mapped, and when the schema allows no other fields, every
// mapped input must exist.
func (c *checker) checkMappedInputs(d *document, ptr string, t *TaskType, inputs map[string]string) {
	schema, ok := t.inputsDoc[inputsSchemaURL(t.name)].(map[string]any)
	if !ok {
		return
	}
	typos := map[string]bool{} // mapped inputs reported as a misspelt required one
	if required, ok := schema["required"].([]any); ok {
		var missing []string
		for _, r := range required {
			if name, isStr := r.(string); isStr {
				if _, mapped := inputs[name]; !mapped {
					if typo, found := misspeltAs(name, undeclared(sortedKeys(inputs), schema)); found && !typos[typo] {
						typos[typo] = true
						c.failKey(d, joinPointer(ptr, typo), "%s requires input %q; did you misspell it as %q?", t.what(), name, typo)
						continue
					}
					missing = append(missing, fmt.Sprintf("%q", name))
				}
			}
		}
		if len(missing) > 0 {
			noun := "input"
			if len(missing) > 1 {
				noun = "inputs"
			}
			c.fail(d, ptr, "%s requires %s %s", t.what(), noun, strings.Join(missing, ", "))
		}
	}
	props, _ := schema["properties"].(map[string]any)
	if open, isBool := schema["additionalProperties"].(bool); !isBool || open || schema["patternProperties"] != nil {
		return
	}
	known := sortedKeys(props)
	for _, name := range sortedKeys(inputs) {
		if slices.Contains(known, name) || typos[name] {
			continue
		}
		hint := ""
		if sug, ok := suggest(name, known); ok {
			hint = fmt.Sprintf("; did you mean %q?", sug)
		}
		c.failKey(d, joinPointer(ptr, name), "%s has no input %q%s", t.what(), name, hint)
	}
}
