package config

import (
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Var describes one registered setting.
type Var struct {
	Flag    string
	Env     string // empty when the setting has no environment variable
	Default string
	Usage   string
}

// Loader registers settings on a flag set and resolves them from flags,
// then the environment, then defaults.
type Loader struct {
	fs     *flag.FlagSet
	lookup func(string) (string, bool)
	vars   []Var
}

// NewLoader returns a loader for the named command. lookup reads the
// environment; nil means os.LookupEnv.
func NewLoader(name string, lookup func(string) (string, bool)) *Loader {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	l := &Loader{fs: fs, lookup: lookup}
	fs.Usage = func() { l.PrintUsage(fs.Output()) }
	return l
}

// FlagSet exposes the underlying flag set, e.g. to set its output.
func (l *Loader) FlagSet() *flag.FlagSet { return l.fs }

// Vars lists the registered settings in registration order.
func (l *Loader) Vars() []Var { return append([]Var(nil), l.vars...) }

func (l *Loader) register(v flag.Value, name, env, usage string) {
	l.fs.Var(v, name, usage)
	l.vars = append(l.vars, Var{Flag: name, Env: env, Default: v.String(), Usage: usage})
}

// String registers a string setting.
func (l *Loader) String(p *string, name, env, def, usage string) {
	*p = def
	l.register((*stringValue)(p), name, env, usage)
}

// Int registers an integer setting.
func (l *Loader) Int(p *int, name, env string, def int, usage string) {
	*p = def
	l.register((*intValue)(p), name, env, usage)
}

// Int64 registers a 64-bit integer setting, such as a size in bytes.
func (l *Loader) Int64(p *int64, name, env string, def int64, usage string) {
	*p = def
	l.register((*int64Value)(p), name, env, usage)
}

// Float registers a floating-point setting.
func (l *Loader) Float(p *float64, name, env string, def float64, usage string) {
	*p = def
	l.register((*floatValue)(p), name, env, usage)
}

// Bool registers a boolean setting.
func (l *Loader) Bool(p *bool, name, env string, def bool, usage string) {
	*p = def
	l.register((*boolValue)(p), name, env, usage)
}

// Duration registers a duration setting ("500ms", "2m").
func (l *Loader) Duration(p *time.Duration, name, env string, def time.Duration, usage string) {
	*p = def
	l.register((*durationValue)(p), name, env, usage)
}

// Strings registers a list setting: the flag may be given more than
// once, and each value (and the environment variable's) is split on
// commas. It defaults to empty.
func (l *Loader) Strings(p *[]string, name, env, usage string) {
	*p = nil
	l.register((*stringsValue)(p), name, env, usage)
}

// Parse parses args, then fills every setting not given as a flag from its
// environment variable. The remaining positional arguments are returned.
func (l *Loader) Parse(args []string) ([]string, error) {
	if err := l.fs.Parse(args); err != nil {
		return nil, err
	}
	given := map[string]bool{}
	l.fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, v := range l.vars {
		if given[v.Flag] || v.Env == "" {
			continue
		}
		val, ok := l.lookup(v.Env)
		if !ok {
			continue
		}
		if err := l.fs.Set(v.Flag, val); err != nil {
			return nil, fmt.Errorf("environment %s=%q: %w", v.Env, val, err)
		}
	}
	return l.fs.Args(), nil
}

// PrintUsage writes a table of every setting, its variable and default.
func (l *Loader) PrintUsage(w io.Writer) {
	fmt.Fprintf(w, "Usage of %s:\n", l.fs.Name())
	vars := l.Vars()
	sort.SliceStable(vars, func(i, j int) bool { return vars[i].Flag < vars[j].Flag })
	for _, v := range vars {
		env := ""
		if v.Env != "" {
			env = " ($" + v.Env + ")"
		}
		fmt.Fprintf(w, "  --%s%s\n      %s (default %q)\n", v.Flag, env, v.Usage, v.Default)
	}
}

type stringValue string

func (s *stringValue) Set(v string) error { *s = stringValue(v); return nil }
func (s *stringValue) String() string     { return string(*s) }

type stringsValue []string

func (s *stringsValue) Set(v string) error {
	for part := range strings.SplitSeq(v, ",") {
		if part = strings.TrimSpace(part); part != "" {
			*s = append(*s, part)
		}
	}
	return nil
}
func (s *stringsValue) String() string { return strings.Join(*s, ",") }

type intValue int

func (i *intValue) Set(v string) error {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return fmt.Errorf("not an integer: %q", v)
	}
	*i = intValue(n)
	return nil
}
func (i *intValue) String() string { return strconv.Itoa(int(*i)) }

type int64Value int64

func (i *int64Value) Set(v string) error {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return fmt.Errorf("not an integer: %q", v)
	}
	*i = int64Value(n)
	return nil
}
func (i *int64Value) String() string { return strconv.FormatInt(int64(*i), 10) }

type floatValue float64

func (f *floatValue) Set(v string) error {
	n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		return fmt.Errorf("not a number: %q", v)
	}
	*f = floatValue(n)
	return nil
}
func (f *floatValue) String() string { return strconv.FormatFloat(float64(*f), 'g', -1, 64) }

type boolValue bool

func (b *boolValue) Set(v string) error {
	n, err := strconv.ParseBool(strings.TrimSpace(v))
	if err != nil {
		return fmt.Errorf("not a boolean (true/false): %q", v)
	}
	*b = boolValue(n)
	return nil
}
func (b *boolValue) String() string   { return strconv.FormatBool(bool(*b)) }
func (b *boolValue) IsBoolFlag() bool { return true }

type durationValue time.Duration

func (d *durationValue) Set(v string) error {
	n, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil {
		return fmt.Errorf("not a duration (e.g. 500ms, 30s, 2m): %q", v)
	}
	*d = durationValue(n)
	return nil
}
func (d *durationValue) String() string { return time.Duration(*d).String() }
