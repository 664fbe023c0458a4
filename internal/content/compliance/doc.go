// Package compliance is the compliance stage of the ingest pipeline: the
// rules no chunk may break before any of its text leaves the process (to
// the embedder, or into the vector store), and the source allow-list. A
// chunk that breaks one is escalated under the rule's name, never with
// the matched text. The pipeline checks every chunk it embeds; an
// operator's correction of a dead letter is checked by the same rules
// before it is replayed.
package compliance
