package catalog

import (
	"maps"
	"slices"
	"testing"
)

// Every note names a setting some binary registers, so a removed or
// renamed setting cannot leave its note behind.
func TestNotesNameSettings(t *testing.T) {
	t.Parallel()
	registered := map[string]bool{}
	for _, vars := range Settings() {
		for _, v := range vars {
			registered[noteKey(v)] = true
		}
	}
	for _, k := range slices.Sorted(maps.Keys(notes)) {
		if !registered[k] {
			t.Errorf("notes has %s, which no binary registers: remove or rename it", k)
		}
	}
}

// The usage text the CLI prints is read back setting by setting.
func TestParseUsage(t *testing.T) {
	t.Parallel()
	text := "Usage of sluice x:\n  --ack-wait ($ACK_WAIT)\n      the durables' AckWait (see \"a\") (default \"1m0s\")\n  --json\n      print JSON (default \"false\")\n"
	vars, err := parseUsage(text)
	if err != nil {
		t.Fatal(err)
	}
	if len(vars) != 2 || vars[0].Flag != "ack-wait" || vars[0].Env != "ACK_WAIT" || vars[0].Default != "1m0s" ||
		vars[0].Usage != "the durables' AckWait (see \"a\")" || vars[1].Flag != "json" || vars[1].Env != "" {
		t.Errorf("parseUsage = %+v", vars)
	}
	if _, err := parseUsage("  --x ($X)\n      no default here\n"); err == nil {
		t.Error("a usage line without its default was accepted")
	}
}
