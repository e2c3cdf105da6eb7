package store

// DeleteStaleDedupKeysSQL is DeleteStaleDedupKeys's statement, for plan
// tests.
func DeleteStaleDedupKeysSQL() string { return deleteStaleDedupKeysSQL }
