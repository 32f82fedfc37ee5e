module hoard

go 1.26.0

require (
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/ulikunitz/xz v0.5.17 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
