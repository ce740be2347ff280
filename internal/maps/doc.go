// Package maps has no code: its tests keep the repository's maps true.
//
// TestPackageTable reads the package table of docs/architecture.md ("The
// packages") and `go list ./...`, and fails, naming the row to add or fix,
// when a package of the module has no row, a row names no package, or a
// package (or its tests) imports one of the module's packages that its row
// does not allow. TestDocFileLists checks the file names the packages'
// doc.go files give: each names a file that exists, and the doc.go files
// that are their package's map of files (completeFileLists) name every
// non-test file. TestGoDocLength keeps `go doc -all` of the packages in
// docLineBudgets (sandbox: 700 lines, tasks: 1,450) within its budget.
package maps
