package api

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"time"

	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/wftype"
)

// The dashboard signs in by exchanging a bearer token for a session cookie:
// HttpOnly (no script reads it), SameSite=Strict (no other site's page sends
// it) and Secure when the request came over TLS. The database keeps only the
// cookie's SHA-256, with the name and hash of the token it was exchanged
// for, so every instance honours it and rotating the token ends it.
//
// A request authenticated by the cookie that changes anything must also
// carry the session's CSRF token in the X-CSRF-Token header (the dashboard
// reads it from the sign-in answer), and must come from an admin token,
// except signing out.
const (
	sessionCookie = "wf_session"
	csrfHeader    = "X-CSRF-Token"
	sessionTTL    = 12 * time.Hour
)

// uiSession is a signed-in dashboard session.
type uiSession struct {
	csrf      string
	hash      []byte
	expiresAt time.Time
}

// sessionView answers the session operations (schema Session).
type sessionView struct {
	SignedIn  bool       `json:"signed_in"`
	Name      string     `json:"name,omitempty"`
	Role      string     `json:"role,omitempty"`
	Catalogs  []string   `json:"catalogs,omitempty"`
	CSRFToken string     `json:"csrf_token,omitempty"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

func newSessionView(p *principal, sess *uiSession) sessionView {
	v := sessionView{SignedIn: true, Name: p.name, Role: string(p.role), Catalogs: p.catalogs}
	if sess != nil {
		at := sess.expiresAt.UTC()
		v.CSRFToken, v.ExpiresAt = sess.csrf, &at
	}
	return v
}

// sessionHashes returns the stored hash of a cookie value and its CSRF
// token, both derived from the value (which only the browser holds).
func sessionHashes(value string) (hash []byte, csrf string) {
	h := sha256.Sum256([]byte("wf-session:" + value))
	c := sha256.Sum256([]byte("wf-csrf:" + value))
	return h[:], base64.RawURLEncoding.EncodeToString(c[:])
}

// createSession answers POST /ui/session: {"token": "..."} becomes a
// session cookie (201), or 401 for a token that is not valid.
func (s *Server) createSession(w http.ResponseWriter, r *http.Request, _ *principal) error {
	var req struct {
		Token string `json:"token"`
	}
	if prob := s.decodeBody(w, r, &req); prob != nil {
		return prob
	}
	tok := s.findToken(req.Token)
	if tok == nil {
		return newProblem(http.StatusUnauthorized, typeUnauthorized, "Unauthorized", "the token is not valid")
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return err
	}
	value := base64.RawURLEncoding.EncodeToString(raw[:])
	hash, csrf := sessionHashes(value)
	stored, err := s.store.CreateSession(r.Context(), hash, tok.Name, tok.TokenSHA256, sessionTTL)
	if err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: value, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil, MaxAge: int(sessionTTL / time.Second),
	})
	s.log.Info("dashboard sign-in", "token", tok.Name)
	writeJSON(w, http.StatusCreated, newSessionView(principalOf(tok), &uiSession{csrf: csrf, expiresAt: stored.ExpiresAt}))
	return nil
}

// getSession answers GET /ui/session: who is signed in, and the session's
// CSRF token when the request came with the cookie. It needs no token: the
// dashboard asks it on load, and it answers {"signed_in": false} (200, so
// no browser logs an error) when the request carries no valid session or
// token.
func (s *Server) getSession(w http.ResponseWriter, r *http.Request, _ *principal) error {
	p, prob := s.authenticate(r)
	if prob != nil {
		if prob.Status != http.StatusUnauthorized {
			return prob
		}
		writeJSON(w, http.StatusOK, sessionView{})
		return nil
	}
	writeJSON(w, http.StatusOK, newSessionView(p, p.session))
	return nil
}

// deleteSession answers DELETE /ui/session: the session ends and its cookie
// is cleared (204). With a bearer token it only clears the cookie.
func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request, p *principal) error {
	if p.session != nil {
		if err := s.store.DeleteSession(r.Context(), p.session.hash); err != nil {
			return err
		}
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: -1})
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// authenticateSession finds the principal of a session cookie: the session
// must exist, be unexpired, and its token must still be configured with the
// same hash.
func (s *Server) authenticateSession(r *http.Request, value string) (*principal, *problem) {
	unauthorized := func(detail string) *problem {
		p := newProblem(http.StatusUnauthorized, typeUnauthorized, "Unauthorized", "%s", detail)
		p.header = http.Header{"Www-Authenticate": {`Bearer realm="wf"`}}
		return p
	}
	hash, csrf := sessionHashes(value)
	sess, err := s.store.GetSession(r.Context(), hash)
	if errors.Is(err, wftype.ErrNotFound) {
		return nil, unauthorized("the session has ended; sign in again")
	}
	if err != nil {
		return nil, s.toProblem(r, err)
	}
	var tok *config.Token
	for i := range s.cfg.Tokens {
		t := &s.cfg.Tokens[i]
		if t.Name == sess.TokenName && subtle.ConstantTimeCompare([]byte(t.TokenSHA256), []byte(sess.TokenSHA256)) == 1 {
			tok = t
		}
	}
	if tok == nil {
		return nil, unauthorized("the token of this session is no longer valid; sign in again")
	}
	p := principalOf(tok)
	p.session = &uiSession{csrf: csrf, hash: hash, expiresAt: sess.ExpiresAt}
	return p, nil
}

// checkSessionWrite guards a request authenticated by a session cookie that
// may change something: it must carry the session's CSRF token, must not
// come from another site, and must be an admin's (signing out excepted).
func checkSessionWrite(r *http.Request, p *principal, rt route) *problem {
	if p == nil || p.session == nil {
		return nil
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return nil
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return forbidden("a dashboard session cannot be used from another site (Sec-Fetch-Site: %s)", site)
	}
	got := r.Header.Get(csrfHeader)
	if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(p.session.csrf)) != 1 {
		return forbidden("send the session's CSRF token in the %s header", csrfHeader)
	}
	if rt.pattern == "/ui/session" {
		return nil
	}
	if p.role != config.RoleAdmin {
		return forbidden("actions in the dashboard need an admin token; this token's role is %s", p.role)
	}
	return nil
}
