package messages

// RedactedText is the text an escalated chunk's job carries in place of
// its own: it names the rule that matched and nothing of what it matched.
func RedactedText(rule string) string {
	return "[redacted: " + rule + "]"
}

// Redacted returns job as it may leave the process once rule has
// escalated it: its text replaced by RedactedText, its metadata dropped
// (a secret may sit there too) and its content hash recomputed. Every
// stage that escalates a chunk (producer, consumer, replayer) publishes
// and parks this job, never the original; the original text is kept once,
// in escalated_chunks.
func Redacted(job ChunkJob, rule string) (ChunkJob, error) {
	job.Text, job.Metadata = RedactedText(rule), nil
	hash, err := ContentHash(job.Text, nil)
	if err != nil {
		return ChunkJob{}, err
	}
	job.ContentHash = hash
	return job, nil
}
