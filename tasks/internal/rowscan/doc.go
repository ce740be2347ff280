// Package rowscan is the one loop over a query's rows that both store
// backends (tasks/sqlite, tasks/postgres) share (rowscan.go): each row
// read in order into a slice, the first error of a row's scan or of the
// result ending it. Each store runs the query, scans a row and closes
// the result in its own way.
package rowscan
