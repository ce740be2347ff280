// Package kvhost is the host module the plugin_host fixture
// (internal/testwasm/wat) imports, for tests of plugins' host calls:
// env.kv_get(key_ptr, key_len, buf_ptr, buf_len i32) -> i32 reads the key
// from the guest's memory, asks the test's [Get] for its value, writes as
// much of the value as fits in the buffer and returns the value's whole
// length, or -1 where the key has no value.
//
// kvhost.go holds the module.
package kvhost
