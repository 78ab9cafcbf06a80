package promrules

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestMetricNames(t *testing.T) {
	for name, c := range map[string]struct {
		expr string
		want []string
		err  string
	}{
		"plain":           {expr: "up", want: []string{"up"}},
		"selector":        {expr: `mcs_x{pool="worker",a!~"b.*"} > 0`, want: []string{"mcs_x"}},
		"range":           {expr: "rate(mcs_requests_total[5m])", want: []string{"mcs_requests_total"}},
		"subquery":        {expr: "max_over_time(rate(a_total[5m])[1h : 5m])", want: []string{"a_total"}},
		"name matcher":    {expr: `{__name__="mcs_y", pool="w"}`, want: []string{"mcs_y"}},
		"name regex":      {expr: `{__name__=~"mcs_.*"}`, err: "cannot be listed"},
		"aggregation":     {expr: "sum by (pool, stage) (increase(b_total[10m])) > 0", want: []string{"b_total"}},
		"upper case":      {expr: "SUM BY (pool) (b) OR ON (pool) c", want: []string{"b", "c"}},
		"without":         {expr: "max without (instance) (c)", want: []string{"c"}},
		"matching":        {expr: "a * on (pool) group_left (node) b unless ignoring (x) c", want: []string{"a", "b", "c"}},
		"group_left bare": {expr: "a * on () group_left d", want: []string{"a", "d"}},
		"strings":         {expr: `label_replace(a, "dst", "$1 \" b", 'src', ` + "`(.*)`" + `)`, want: []string{"a"}},
		"numbers":         {expr: "a > 1e-3 and b < 0x1F or c != Inf and d > .5 and e offset -5m", want: []string{"a", "b", "c", "d", "e"}},
		"bool":            {expr: "a > bool 0", want: []string{"a"}},
		"at":              {expr: "a @ start() + b @ 1609746000", want: []string{"a", "b"}},
		"colon names":     {expr: "job:a:rate5m / :b", want: []string{":b", "job:a:rate5m"}},
		"comment":         {expr: "a # b c\n + d", want: []string{"a", "d"}},
		"twice":           {expr: "a + a", want: []string{"a"}},
		"functions":       {expr: "absent(a) or vector(0) * time()", want: []string{"a"}},
		"topk":            {expr: `topk(3, a) and count_values("v", b) and quantile(0.9, c)`, want: []string{"a", "b", "c"}},
		"unbalanced":      {expr: "sum(a", err: "unclosed"},
		"mismatched":      {expr: "sum(a]", err: "unbalanced"},
		"close only":      {expr: "a)", err: "unbalanced"},
		"unterminated":    {expr: `a{b="c}`, err: "unterminated"},
		"bad char":        {expr: "a ; b", err: "unexpected"},
		"bad selector":    {expr: "a{b=(c)}", err: "unexpected"},
		"bad label list":  {expr: "sum by (a+b) (c)", err: "label list"},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := metricNames(c.expr)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("metricNames(%q) = %v, %v; want an error with %q", c.expr, got, err, c.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, c.want) {
				t.Fatalf("metricNames(%q) = %q, %v; want %q", c.expr, got, err, c.want)
			}
		})
	}
}

func FuzzMetricNames(f *testing.F) {
	for _, s := range []string{"a", `sum by (x) (rate(a{b="c"}[5m]))`, "a[1h:5m]", `{__name__="x"}`, "a # c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		names, err := metricNames(expr)
		if err != nil {
			return
		}
		for _, n := range names {
			if n == "" || keywords[strings.ToLower(n)] {
				t.Fatalf("metricNames(%q) gave %q", expr, n)
			}
		}
	})
}

func TestRules(t *testing.T) {
	rules := Load(t, "testdata/rule.yaml")
	if len(rules) != 2 || rules[0].Record != "example:requests:rate5m" || rules[1].Alert != "ExampleFailing" || rules[1].Group != "example" {
		t.Fatalf("rules = %+v", rules)
	}
	if p := Problems(rules); len(p) != 0 {
		t.Errorf("problems in a complete alert: %q", p)
	}
	bare := rules[1]
	bare.Labels, bare.Annotations = nil, map[string]string{"summary": "s"}
	if p := Problems([]Rule{bare}); len(p) != 3 {
		t.Errorf("problems of an alert with no severity, description or runbook_url: %q", p)
	}
	for name, manifest := range map[string]string{
		"no rule":   "kind: ConfigMap\nmetadata: {name: x}\n",
		"no groups": "kind: PrometheusRule\nmetadata: {name: x}\nspec: {}\n",
		"no expr":   "kind: PrometheusRule\nmetadata: {name: x}\nspec: {groups: [{name: g, rules: [{alert: A}]}]}\n",
		"not yaml":  "kind: [",
	} {
		if _, err := parseRules([]byte(manifest)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestExposedAndUnexposed(t *testing.T) {
	scrape := `# HELP example_requests_total Requests.
# TYPE example_requests_total counter
example_requests_total{pool="worker"} 3
# HELP example_seconds Latency.
# TYPE example_seconds histogram
example_seconds_bucket{le="+Inf"} 1
example_seconds_sum 0.1
example_seconds_count 1
# HELP example_failing Failing.
# TYPE example_failing gauge
`
	exposed, err := Exposed(strings.NewReader(scrape))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"example_requests_total", "example_seconds_bucket", "example_seconds_count"} {
		if !exposed[n] {
			t.Errorf("%s not exposed", n)
		}
	}
	if exposed["example_failing"] {
		t.Error("a family with no series exposed")
	}
	got := Unexposed(Load(t, "testdata/rule.yaml"), exposed)
	want := []string{"ExampleFailing reads example_failing, which the binary does not expose"}
	if !slices.Equal(got, want) {
		t.Errorf("Unexposed = %q, want %q (the recorded series counts as exposed)", got, want)
	}
	if _, err := Exposed(strings.NewReader("not a metric line {")); err == nil {
		t.Error("a bad scrape read without error")
	}
}

func TestPromtool(t *testing.T) {
	promtool := promtoolPath(t)
	Check(t, "testdata/rule.yaml")
	Test(t, "testdata/rule.yaml", "testdata/rule_test.yaml")
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	write := func(path, s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(bad, "kind: PrometheusRule\nmetadata: {name: x}\nspec: {groups: [{name: g, rules: [{alert: A, expr: 'sum(('}]}]}\n")
	if err := check(promtool, bad, t.TempDir()); err == nil || !strings.Contains(err.Error(), "promtool check rules") {
		t.Errorf("promtool check of a bad expression: %v", err)
	}
	raw, err := os.ReadFile("testdata/rule_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	wrong := filepath.Join(dir, "wrong_test.yaml")
	write(wrong, strings.Replace(string(raw), "eval_time: 25m", "eval_time: 14m", 1))
	if err := test(promtool, "testdata/rule.yaml", wrong, t.TempDir()); err == nil || !strings.Contains(err.Error(), "ExampleFailing") {
		t.Errorf("promtool test of a wrong expectation: %v", err)
	}
}

func TestPromtoolMissingFailsUnderCI(t *testing.T) {
	if os.Getenv("PROMRULES_CHILD") == "1" {
		promtoolPath(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestPromtoolMissingFailsUnderCI$")
	cmd.Env = append(os.Environ(), "PROMRULES_CHILD=1", "CI=true", "PATH="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "make promtool") {
		t.Fatalf("without promtool under CI=true: %v\n%s", err, out)
	}
}
