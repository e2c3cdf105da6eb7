package spec

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"
	"gopkg.in/yaml.v3"
)

// taskEnv is what a task type's dedup_key sees.
type taskEnv struct {
	Inputs     map[string]any `expr:"inputs"`
	SchemaName string         `expr:"schema_name"`
	TaskType   string         `expr:"task_type"`
}

// eventFields is what a subscription's expressions see as event.
type eventFields struct {
	EventID    string         `expr:"event_id"`
	EventType  string         `expr:"event_type"`
	Scope      string         `expr:"scope"`
	SchemaName string         `expr:"schema_name"`
	Payload    map[string]any `expr:"payload"`
	CreatedAt  time.Time      `expr:"created_at"`
}

// eventEnv is what a subscription's when, schema_name and inputs see.
type eventEnv struct {
	Event eventFields `expr:"event"`
}

// eventDedupEnv is what a subscription's dedup_key sees.
type eventDedupEnv struct {
	Event    eventFields `expr:"event"`
	TaskType string      `expr:"task_type"`
}

// resultKind is what an expression must return.
type resultKind int

const (
	resultAny resultKind = iota
	resultString
	resultBool
)

// String names the kind in messages.
func (k resultKind) String() string {
	switch k {
	case resultString:
		return "string"
	case resultBool:
		return "bool"
	}
	return "any value"
}

// program is a compiled expression and its source text. It is safe for
// concurrent use: every run gets its own VM.
type program struct {
	source string
	prog   *vm.Program
	result resultKind
	// checked is the result type a check against a typed environment
	// found (a subscription's payload schema), nil when none was made.
	checked reflect.Type
}

// compileProgram type-checks and compiles source against the environment env
// (a zero value of one of the env structs above), with the extra options.
func compileProgram(source string, env any, result resultKind, extra ...expr.Option) (*program, error) {
	opts := append([]expr.Option{expr.Env(env)}, extra...)
	switch result {
	case resultString:
		opts = append(opts, expr.AsKind(reflect.String))
	case resultBool:
		opts = append(opts, expr.AsBool())
	}
	p, err := expr.Compile(source, opts...)
	if err != nil {
		return nil, err
	}
	return &program{source: source, prog: p, result: result}, nil
}

// run evaluates the program and checks its result kind.
func (p *program) run(env any) (any, error) {
	out, err := expr.Run(p.prog, env)
	if err != nil {
		return nil, fmt.Errorf("error evaluating %q: %w", p.source, err)
	}
	switch p.result {
	case resultString:
		if _, ok := out.(string); !ok {
			return nil, fmt.Errorf("error evaluating %q: returned %s, expected a string", p.source, typeName(out))
		}
	case resultBool:
		if _, ok := out.(bool); !ok {
			return nil, fmt.Errorf("error evaluating %q: returned %s, expected a bool", p.source, typeName(out))
		}
	}
	return out, nil
}

// typeName names the type of a value in messages.
func typeName(v any) string {
	if v == nil {
		return "nil"
	}
	return reflect.TypeOf(v).String()
}

// compileExpression compiles the expression at ptr of d, turning a compile
// error into an Error placed at the offending character when it can be.
func (d *document) compileExpression(ptr, source string, env any, result resultKind) (*program, *Error) {
	p, err := compileProgram(source, env, result)
	if err == nil {
		return p, nil
	}
	path := fieldPath(d.value, ptr)
	at := d.at(ptr)
	var fe *file.Error
	if errors.As(err, &fe) {
		msg := explainExprError(fe.Message, env)
		if name, ok := strings.CutPrefix(fe.Message, "unknown name "); ok && strings.TrimSpace(source) == name {
			msg += fmt.Sprintf("; if you meant the text %s, write it as a quoted literal inside the YAML value: '\"%s\"'", name, name)
		}
		if strings.Contains(fe.Message, `Operator("=")`) {
			msg = "= is not a comparison; write == to compare (an expression cannot assign)"
		}
		if exact, ok := d.exprPos(ptr, source, fe.Line, fe.Column); ok {
			at = exact
		} else {
			msg = fmt.Sprintf("%s (line %d, column %d of the expression)", msg, fe.Line, fe.Column+1)
		}
		e := d.errorAt(at, "%s: %s", path, msg)
		return nil, &e
	}
	msg := err.Error()
	if _, got, ok := strings.Cut(msg, ", but got "); ok && strings.HasPrefix(msg, "expected ") {
		msg = fmt.Sprintf("must return a %s; it returns %s", result, got)
	}
	e := d.errorAt(at, "%s: %s", path, msg)
	return nil, &e
}

// explainExprError rewords expr's messages about unknown names and fields
// with what the environment does have, in the names authors write.
func explainExprError(msg string, env any) string {
	top, nested := envFields(reflect.TypeOf(env))
	if name, ok := strings.CutPrefix(msg, "unknown name "); ok {
		return fmt.Sprintf("unknown name %s; the expression sees %s", name, strings.Join(top, ", "))
	}
	if m := noFieldRE.FindStringSubmatch(msg); m != nil {
		if owner, ok := nested[m[1]]; ok {
			return fmt.Sprintf("%s has no field %s; it has %s", owner.name, m[2], strings.Join(owner.fields, ", "))
		}
	}
	return msg
}

// noFieldRE reads expr's message about a missing struct field.
var noFieldRE = regexp.MustCompile(`^type (\S+) has no field (\S+)$`)

// envStruct is a struct-typed variable of an environment.
type envStruct struct {
	name   string
	fields []string
}

// envFields lists the names an environment struct offers, and for each of
// its struct-typed fields (by Go type name), that field's own names.
func envFields(t reflect.Type) (top []string, nested map[string]envStruct) {
	nested = map[string]envStruct{}
	for f := range t.Fields() {
		name := f.Tag.Get("expr")
		top = append(top, name)
		if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeFor[time.Time]() {
			var fields []string
			for sub := range f.Type.Fields() {
				fields = append(fields, sub.Tag.Get("expr"))
			}
			nested[f.Type.String()] = envStruct{name: name, fields: fields}
		}
	}
	return top, nested
}

// exprPos maps a position inside an expression (1-based line, 0-based column,
// as expr reports them) to the file, for one-line scalars written plain or
// quoted without escapes.
func (d *document) exprPos(ptr, source string, line, col int) (pos, bool) {
	n, ok := d.nodes[ptr]
	if !ok || n.Kind != yaml.ScalarNode || n.Value != source || line != 1 || strings.ContainsAny(source, "\n\r") {
		return pos{}, false
	}
	switch n.Style {
	case 0:
		return pos{Line: n.Line, Col: n.Column + col}, true
	case yaml.SingleQuotedStyle:
		if !strings.Contains(source, "'") {
			return pos{Line: n.Line, Col: n.Column + 1 + col}, true
		}
	case yaml.DoubleQuotedStyle:
		if !strings.ContainsAny(source, `"\`) {
			return pos{Line: n.Line, Col: n.Column + 1 + col}, true
		}
	}
	return pos{}, false
}
