package testwasm

var (
	WithoutRace = withoutRace
	SourceHash  = sourceHash
	FindRoot    = findRoot
	GoGuestErr  = goGuest
)
