package api

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/wftype"
)

// principal is who made a request: the token's name, role and catalogs.
type principal struct {
	name string
	role config.Role
	// catalogs limits a client or worker token to these catalog ids; nil
	// means every catalog (and platform tasks).
	catalogs []string
	// taskTypes limits a worker token to the tasks of these types; nil
	// means every type.
	taskTypes []string
	// session is set when the request was authenticated by a dashboard
	// session cookie rather than a bearer header.
	session *uiSession
}

// limited reports whether the principal sees only some catalogs.
func (p *principal) limited() bool { return p.role != config.RoleAdmin && len(p.catalogs) > 0 }

// canUseCatalog reports whether the principal may see and touch a catalog.
func (p *principal) canUseCatalog(id string) bool {
	return !p.limited() || slices.Contains(p.catalogs, id)
}

// authenticate finds the token presented in the Authorization header. Every
// configured token is compared (in constant time, on hashes), whether or not
// an earlier one matched, so the time taken says nothing about which matched.
//
// A request without an Authorization header may instead carry a dashboard
// session cookie (see session.go).
func (s *Server) authenticate(r *http.Request) (*principal, *problem) {
	h := r.Header.Get("Authorization")
	if h == "" {
		if c, err := r.Cookie(sessionCookie); err == nil && c.Value != "" {
			return s.authenticateSession(r, c.Value)
		}
	}
	scheme, presented, ok := strings.Cut(h, " ")
	if h == "" || !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(presented) == "" {
		p := newProblem(http.StatusUnauthorized, typeUnauthorized, "Unauthorized",
			"send a bearer token: Authorization: Bearer <token>")
		p.header = http.Header{"Www-Authenticate": {`Bearer realm="wf"`}}
		return nil, p
	}
	found := s.findToken(strings.TrimSpace(presented))
	if found == nil {
		p := newProblem(http.StatusUnauthorized, typeUnauthorized, "Unauthorized", "the bearer token is not valid")
		p.header = http.Header{"Www-Authenticate": {`Bearer realm="wf", error="invalid_token"`}}
		return nil, p
	}
	return principalOf(found), nil
}

// findToken returns the configured token presented, or nil. Every token is
// compared, whether or not an earlier one matched.
func (s *Server) findToken(presented string) *config.Token {
	var found *config.Token
	for i := range s.cfg.Tokens {
		if s.cfg.Tokens[i].Matches(presented) && found == nil {
			found = &s.cfg.Tokens[i]
		}
	}
	return found
}

// principalOf is who holds a token.
func principalOf(t *config.Token) *principal {
	return &principal{name: t.Name, role: t.Role, catalogs: slices.Clone(t.Catalogs), taskTypes: slices.Clone(t.TaskTypes)}
}

// authorize checks the principal's role against the route's roles: admin
// routes answer 403 to everyone else.
func authorize(p *principal, roles []config.Role) *problem {
	if slices.Contains(roles, p.role) {
		return nil
	}
	names := make([]string, len(roles))
	for i, r := range roles {
		names[i] = string(r)
	}
	return forbidden("this operation needs a token with role %s; this token's role is %s", strings.Join(names, " or "), p.role)
}

// scope is the set of tenants a principal may see: all, or the schema names
// of its catalogs.
type scope struct {
	all     bool
	schemas []string
}

// has reports whether a tenant schema is in the scope.
func (sc scope) has(schemaName string) bool { return sc.all || slices.Contains(sc.schemas, schemaName) }

// scopeOf resolves the principal's catalogs to their tenant schemas (one
// indexed look-up per request, so a catalog created or deleted since shows at
// once).
func (s *Server) scopeOf(ctx context.Context, p *principal) (scope, error) {
	if !p.limited() {
		return scope{all: true}, nil
	}
	schemas, err := s.store.Catalog().SchemaNamesOf(ctx, p.catalogs)
	if err != nil {
		return scope{}, err
	}
	return scope{schemas: schemas}, nil
}

// visibleTask reads a task and checks the principal may see it. A task of
// another tenant, or (for a worker token limited to task types) of another
// type, answers exactly as a task that does not exist (404), so a limited
// token learns nothing about other catalogs and cannot report on them.
func (s *Server) visibleTask(ctx context.Context, p *principal, id taskID) (wftype.Task, error) {
	t, err := s.store.GetTask(ctx, id.UUID)
	if err != nil {
		return t, s.taskNotFound(id, err)
	}
	sc, err := s.scopeOf(ctx, p)
	if err != nil {
		return t, err
	}
	if !sc.has(t.SchemaName) || len(p.taskTypes) > 0 && !slices.Contains(p.taskTypes, t.TaskType) {
		return wftype.Task{}, notFound("no task %s", id.UUID)
	}
	return t, nil
}
