package secrets

import (
	"strconv"
	"strings"
)

// automaton finds many literals in one pass over a text (Aho–Corasick): a
// trie of the literals in ASCII lower case in which every state also
// knows where to go on a byte that leaves the trie, so that each byte of
// the text costs one table lookup, however many literals there are. A
// literal that is not folded is compared with the text's own bytes once
// found.
type automaton struct {
	// class maps a byte, ASCII letters folded, to its column in next;
	// column 0 stands for every byte no literal holds.
	class   [256]uint8
	classes int
	// next is the transition table: next[row+class] is the row of the
	// next state, row being state×classes, negated when literals end at
	// that state, so that a byte that ends none costs no more than the
	// lookup.
	next []int32
	// out lists, per state, the literals (indexes in lits) that end
	// there, suffix links followed.
	out  [][]int32
	lits []autoLiteral
}

// autoLiteral is one literal of an automaton and whom it belongs to.
type autoLiteral struct {
	text  string
	fold  bool
	owner int
}

// newAutomaton builds the automaton of lits.
func newAutomaton(lits []autoLiteral) *automaton {
	a := &automaton{lits: lits, classes: 1}
	for _, l := range lits {
		if len(l.text) < 2 {
			panic("secrets: literal " + strconv.Quote(l.text) + " is shorter than 2 bytes")
		}
		for i := 0; i < len(l.text); i++ {
			if c := lowerByte(l.text[i]); a.class[c] == 0 {
				a.class[c] = uint8(a.classes)
				a.classes++
			}
		}
	}
	if a.classes > 255 {
		panic("secrets: too many distinct bytes in literals")
	}
	for c := 'A'; c <= 'Z'; c++ {
		a.class[c] = a.class[c+'a'-'A']
	}
	a.addState()
	for i, l := range lits {
		s := int32(0)
		for j := 0; j < len(l.text); j++ {
			at := int(s)*a.classes + int(a.class[l.text[j]])
			if a.next[at] <= 0 {
				a.next[at] = a.addState()
			}
			s = a.next[at]
		}
		a.out[s] = append(a.out[s], int32(i))
	}
	a.link()
	for i, t := range a.next {
		a.next[i] = t * int32(a.classes)
		if len(a.out[t]) > 0 {
			a.next[i] = -a.next[i]
		}
	}
	return a
}

func (a *automaton) addState() int32 {
	a.next = append(a.next, make([]int32, a.classes)...)
	a.out = append(a.out, nil)
	return int32(len(a.out) - 1)
}

// link turns the trie into the automaton, breadth first: a missing
// transition goes where the state's longest proper suffix in the trie
// goes, and a state inherits that suffix's literals. In the trie, 0 in
// next means "no child" (the root is nobody's child).
func (a *automaton) link() {
	fail := make([]int32, len(a.out))
	var queue []int32
	for c := range a.classes {
		if s := a.next[c]; s > 0 {
			queue = append(queue, s)
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		a.out[s] = append(a.out[s], a.out[fail[s]]...)
		for c := range a.classes {
			at := int(s)*a.classes + c
			if t := a.next[at]; t > 0 {
				fail[t] = a.next[int(fail[s])*a.classes+c]
				queue = append(queue, t)
			} else {
				a.next[at] = a.next[int(fail[s])*a.classes+c]
			}
		}
	}
}

// each calls fn with the owner and start offset of every literal found
// in text, in the order the literals end.
func (a *automaton) each(text string, fn func(owner, start int)) {
	row := int32(0)
	for i := 0; i < len(text); i++ {
		if row = a.next[row+int32(a.class[text[i]])]; row >= 0 {
			continue
		}
		row = -row
		for _, k := range a.out[int(row)/a.classes] {
			l := &a.lits[k]
			start := i + 1 - len(l.text)
			if l.fold || text[start:i+1] == l.text {
				fn(l.owner, start)
			}
		}
	}
}

func lowerByte(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// ruleLiterals lists the literals of every rule, owned by the rule's
// index; folded literals must be written in lower case.
func ruleLiterals() []autoLiteral {
	var out []autoLiteral
	for i, r := range rules {
		for _, lit := range r.literals {
			if r.fold && lit != strings.ToLower(lit) {
				panic("secrets: folded literal " + strconv.Quote(lit) + " is not in lower case")
			}
			out = append(out, autoLiteral{text: lit, fold: r.fold, owner: i})
		}
	}
	return out
}
