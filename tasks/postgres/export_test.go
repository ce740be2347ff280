package postgres

// LockKey exposes the advisory lock keys to the tests.
var LockKey = lockKey
