package classify

// fromSQLState classifies a PostgreSQL error by its SQLSTATE; the table is
// documented on Classify. ok is false for a code it does not know, so that
// Classify can still recognise a timeout or a dropped connection further down
// the chain before settling on Ambiguous.
func fromSQLState(state string) (d Decision, ok bool) {
	d.Code = sqlStateCode(state)
	switch state {
	case "40001", // serialization_failure
		"40P01", // deadlock_detected
		"55P03", // lock_not_available
		"57P01", // admin_shutdown
		"57P02", // crash_shutdown
		"57P03", // cannot_connect_now
		"25006": // read_only_sql_transaction
		d.Disposition, d.Class = Retry, ClassDatabaseTransient
		return d, true
	case "57014": // query_canceled
		d.Disposition, d.Class = Retry, ClassTimeout
		return d, true
	case "23505", // unique_violation
		"23503", // foreign_key_violation
		"23P01": // exclusion_violation
		d.Disposition, d.Class = Ambiguous, ClassConstraint
		return d, true
	}
	if len(state) != 5 {
		return d, false
	}
	switch state[:2] {
	case "08", // connection_exception
		"53": // insufficient_resources
		d.Disposition, d.Class = Retry, ClassDatabaseTransient
	case "23": // integrity_constraint_violation
		d.Disposition, d.Class = Quarantine, ClassConstraint
	case "22", // data_exception
		"54": // program_limit_exceeded
		d.Disposition, d.Class = Quarantine, ClassDatabasePermanent
	case "42", // syntax_error_or_access_rule_violation
		"28", // invalid_authorization_specification
		"3D", // invalid_catalog_name
		"3F": // invalid_schema_name
		d.Disposition, d.Class = Ambiguous, ClassDatabaseSetup
	default:
		return d, false
	}
	return d, true
}

func sqlStateCode(state string) string {
	if state == "" {
		return ""
	}
	return "sqlstate_" + state
}
