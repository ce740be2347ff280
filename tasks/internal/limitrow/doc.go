// Package limitrow is what both store backends (tasks/sqlite,
// tasks/postgres) share of the tables of tenants' and queues' limits
// (limitrow.go): which table and key column each uses; tasks.Store's
// setters of limits (Setters: SetTenantWeight and the others, embedded
// in each Store), which check a setting and a name before it is
// written; and the statements that set a row's columns and drop a row
// left with the defaults. Each store runs those statements in its own
// way.
package limitrow
