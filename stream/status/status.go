// Package status serves odwatch's status page and its JSON API on the
// metrics address, next to /metrics, /healthz and /readyz:
//
//	GET /                                   the streams: records/s, window, last evaluation, rules holding and violated
//	GET /streams/{stream}                   every tracked rule (violated first) with its error chart and eps band; recent events
//	GET /streams/{stream}/rules/{id}        one rule: plain words, chart, events with their windows, sampled violating records
//	GET /api/streams                        the stream list as JSON
//	GET /api/streams/{stream}               the stream page as JSON
//	GET /api/streams/{stream}/rules/{id}    the rule page as JSON
//	GET /static/status.css, /static/status.js
//
// Pages are rendered on the server (html/template, inline SVG charts) from
// the same values the API serves; everything is embedded in the binary.
// While open, a page polls /api/streams and, when a stream was evaluated
// since, fetches itself and swaps its content in place (no reload).
//
// Safety: every record value and column name goes through html/template's
// escaping, the Content-Security-Policy forbids inline scripts, and the
// handler answers GET and HEAD only, so nothing here changes the
// monitor's state. With Options.Values false the record values of samples
// are never sent (offsets only). Access control (TLS, basic auth) is the
// server's: see the --web-config-file flag.
package status

import (
	"embed"
	"encoding/json"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/stream"
)

//go:embed assets
var assets embed.FS

// Options configure Handler.
type Options struct {
	// Values shows the values of sampled violating records; false shows
	// their coordinates (topic, partition, offset) only.
	Values bool
	// Logger receives errors reading the source; nil means slog.Default().
	Logger *slog.Logger
}

type handler struct {
	src   Source
	opts  Options
	log   *slog.Logger
	pages *template.Template
}

// Handler serves the status page and API of src.
func Handler(src Source, opts Options) http.Handler {
	h := &handler{src: src, opts: opts, log: opts.Logger}
	if h.log == nil {
		h.log = slog.Default()
	}
	h.pages = template.Must(template.New("").Funcs(funcs).ParseFS(assets, "assets/*.html"))
	static, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded directory exists
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", h.index)
	mux.HandleFunc("GET /streams/{stream}", h.stream)
	mux.HandleFunc("GET /streams/{stream}/rules/{id}", h.rule)
	mux.HandleFunc("GET /api/streams", h.apiStreams)
	mux.HandleFunc("GET /api/streams/{stream}", h.apiStream)
	mux.HandleFunc("GET /api/streams/{stream}/rules/{id}", h.apiRule)
	files := http.FileServerFS(static)
	mux.HandleFunc("GET /static/{file}", func(w http.ResponseWriter, r *http.Request) {
		f := r.PathValue("file")
		if f != "status.css" && f != "status.js" {
			http.NotFound(w, r)
			return
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/" + f
		files.ServeHTTP(w, r2)
	})
	return securityHeaders(mux)
}

// securityHeaders: no inline script may run, no other origin may frame
// the page or receive its URLs.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// page is what a template receives.
type page struct {
	Title   string
	Version string
	Crumbs  []crumb
	Data    any
}

type crumb struct{ Href, Text string }

func streamHref(name string) string { return "/streams/" + url.PathEscape(name) }
func ruleHref(stream, id string) string {
	return streamHref(stream) + "/rules/" + url.PathEscape(id)
}

func (h *handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, errNotFound) || errors.Is(err, stream.ErrUnknownStream) {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	h.log.Error("status page", "path", r.URL.Path, "err", err)
	http.Error(w, "status unavailable: "+err.Error(), http.StatusServiceUnavailable)
}

func (h *handler) render(w http.ResponseWriter, r *http.Request, name string, p page) {
	var b strings.Builder
	if err := h.pages.ExecuteTemplate(&b, name, p); err != nil {
		h.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write([]byte(b.String()))
}

func (h *handler) json(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func (h *handler) index(w http.ResponseWriter, r *http.Request) {
	v := buildStreams(h.src)
	h.render(w, r, "index", page{Title: "streams", Version: v.Version, Data: v})
}

func (h *handler) stream(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("stream")
	v, err := buildStream(h.src, name, h.opts.Values)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.render(w, r, "stream", page{Title: name, Version: v.Version, Crumbs: []crumb{{streamHref(name), name}}, Data: v})
}

func (h *handler) rule(w http.ResponseWriter, r *http.Request) {
	name, id := r.PathValue("stream"), r.PathValue("id")
	v, err := buildRule(h.src, name, id, h.opts.Values)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.render(w, r, "rule", page{Title: v.Rule.Text, Version: v.Version,
		Crumbs: []crumb{{streamHref(name), name}, {ruleHref(name, id), v.Rule.Text}}, Data: v})
}

func (h *handler) apiStreams(w http.ResponseWriter, _ *http.Request) {
	h.json(w, buildStreams(h.src))
}

func (h *handler) apiStream(w http.ResponseWriter, r *http.Request) {
	v, err := buildStream(h.src, r.PathValue("stream"), h.opts.Values)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.json(w, v)
}

func (h *handler) apiRule(w http.ResponseWriter, r *http.Request) {
	v, err := buildRule(h.src, r.PathValue("stream"), r.PathValue("id"), h.opts.Values)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.json(w, v)
}

// Template helpers.
var funcs = template.FuncMap{
	"streamHref": streamHref,
	"ruleHref":   ruleHref,
	"num":        num,
	"smallChart": func(r ruleJSON) chart { return newChart(r.History, r.Band, smallW, smallH) },
	"largeChart": func(r ruleJSON) chart { return newChart(r.History, r.Band, largeW, largeH) },
	"when": func(t any) string {
		switch t := t.(type) {
		case time.Time:
			return when(t)
		case *time.Time:
			if t != nil {
				return when(*t)
			}
		}
		return "—"
	},
	"ago": func(t *time.Time) string {
		if t == nil {
			return "not since start"
		}
		return time.Since(*t).Round(time.Second).String() + " ago"
	},
	"seconds": func(s float64) string {
		return (time.Duration(s * float64(time.Second))).Round(time.Millisecond).String()
	},
	"rate":   func(r float64) string { return strconv.FormatFloat(r, 'f', 1, 64) },
	"window": windowText,
	"value": func(vals map[string]string, col string) string {
		v, ok := vals[col]
		if !ok {
			return "NULL"
		}
		return v
	},
	"hasValue":    func(vals map[string]string, col string) bool { _, ok := vals[col]; return ok },
	"segmentBarW": func() int { return segmentBarW },
	"pct":         func(x float64) string { return strconv.FormatFloat(100*x, 'f', 1, 64) + "%" },
}

func when(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// windowText is a window's offsets, "p0:4000-4999 p1:…", and size.
func windowText(w alerts.WindowInfo) string {
	parts := make([]int32, 0, len(w.StartOffsets))
	for p := range w.StartOffsets {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("p" + strconv.Itoa(int(p)) + ":" + strconv.FormatInt(w.StartOffsets[p], 10) + "-" + strconv.FormatInt(w.EndOffsets[p], 10))
	}
	b.WriteString(" (" + strconv.Itoa(w.Records) + " records)")
	return b.String()
}
