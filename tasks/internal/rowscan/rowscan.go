package rowscan

// Rows is the result of a query as both stores' drivers give it
// (*sql.Rows, pgx.Rows): Next moves to the next row, Err is the error
// that ended them, if any.
type Rows interface {
	Next() bool
	Err() error
}

// All appends to out what scan reads of each row of rows, in order, and
// returns it; on the first error of scan or of rows it returns nil and
// that error. It does not close rows.
func All[T any](out []T, rows Rows, scan func() (T, error)) ([]T, error) {
	for rows.Next() {
		v, err := scan()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
