// Command hello reads all of stdin and writes it upper-cased to stdout.
package main
