package vectorstore

// SearchSQL is the statement Search runs, for tests that EXPLAIN it.
func (p *Postgres) SearchSQL() string { return p.searchSQL }
