// Package idx is hoard's Pebble database: one per volume, in the volume's
// state folder (<volume>/.hist/idx, or below --hist). It implements
// up2k.SessionStore, so unfinished uploads and the warks of finished ones
// survive restarts, and it holds the file index that search runs on
// (files.go, record.go), kept current by the Indexer (indexer.go) from
// store events and scans, and queried through a hand-written compiler:
// lexer.go → parse.go (AST in ast.go) → plan.go → exec.go, with the exact
// meaning of every term in match.go.
//
// Only idx imports Pebble. Every logical change is one batch; what cannot
// be rebuilt from the file system (upload sessions and their chunk
// receipts) is committed with pebble.Sync before the call returns.
//
// # Keys
//
// Every key starts with one byte naming its family (keys.go declares them
// all). A wark is always exactly 44 characters, so it needs no terminator.
//
//	0x00 "schema"                   → decimal schema version ("1")
//	'u' wark                        → upload session (opaque blob from up2k, JSON)
//	'c' wark chunk-key              → "" (chunk receipt: the chunk's bytes are on disk, fdatasync'ed)
//	'f' wark rel                    → file record meta (opaque blob from up2k, JSON)
//
// chunk-key is copyparty's 44-character chunk hash; rel is the file's
// slash-separated path inside the volume. Examples, for the 3-byte file
// "one" uploaded to up/f1 (salt hunter2):
//
//	u XMbpLRqVdtGmgggqjUI6uSoNMTqZVX4K6zr74XA1BRKc
//	    → {"wark":"XMbp…","dir":"up","name":"f1","size":3,"cs":1048576,"hash":["BfcDQQ…"],…}
//	c XMbpLRqVdtGmgggqjUI6uSoNMTqZVX4K6zr74XA1BRKc BfcDQQeKz2oG1CPSFyD5ZD1flTYm2IoCY23DqeeVgq6w
//	    → ""
//	f XMbpLRqVdtGmgggqjUI6uSoNMTqZVX4K6zr74XA1BRKc up/f1
//	    → {"sz":3,"mt":1234567890000000000,"at":1700000000}
//
// The file index (its own version, 0x00 "fschema"; a mismatch drops only
// the families below and a scan rebuilds them). id is a uint64 given to a
// path when it is first indexed, 8 bytes big-endian; most posting keys end
// in it, so one posting list is ordered by id. Numbers are 8 bytes
// big-endian with the sign bit flipped, so byte order is numeric order.
//
// The trigram and extension lists, the big ones, are block lists
// (postings.go): one key per list and block of 65,536 ids (block = id>>16,
// 4 bytes big-endian), whose value is the set of the block's ids in the
// list: 'A' uvarint(n) then n 16-bit offsets, or 'B' and an 8 KiB bitmap
// when denser, followed by a second set of removed ids that only matters
// while merge operands are not yet folded. Indexing writes blind Pebble
// merge operands ("add id 7", "remove id 7"); flushes and compactions fold
// them, and a bottom-level compaction leaves a plain value.
//
//	0x00 "fschema"                  → "3"
//	'r' id                          → record: rel, size, mtime, upload time, uploader, wark, chunk hashes, tags, uploader's address (record.go)
//	'n' rel                         → id
//	'p' lower(rel) 0x00 id          → ""   path prefix (path:) and full scans read the path from the key
//	't' field tri block             → ids  trigrams of lower(rel)+0x00 (field 'p') and of the artist/album/title/genre tags ('a' 'b' 't' 'g')
//	'e' lower(ext) 0x00 block       → ids  extension (ext:)
//	's' size id                     → ""   size (size:)
//	'm' mtime-seconds id            → ""   modification time (date:)
//	'N' lower(name) 0x00 id         → ""   file names (wildcards anchored at the start)
//	'h' chunk-hash id               → ""   each distinct up2k chunk hash (hash search)
//	'w' wark id                     → ""   whole-file identity
//	'v' field value id              → ""   numeric tags: 'y' year, 'r' bitrate kbps, 'd' duration ms
//	'U' upload-time id              → ""   uploads (upload time and address known), read newest first for ?ups and ?ru
//
// Example: the file "music/Daft Punk - One.mp3" of 4,000,000 bytes, id 7,
// tags artist=Daft Punk, year=2001:
//
//	n music/Daft Punk - One.mp3            → 00 00 00 00 00 00 00 07
//	r 00…07                                → 01 "music/Daft Punk - One.mp3" 4000000 …
//	p music/daft punk - one.mp3 00 00…07   → ""
//	t p "mus" 00 00 00 00                  → 'A' 01 07 00 'A' 00   (as merge operand: add offset 7 of block 0)
//	t p "p3" 00 00 00 00 00                → …   (one per distinct trigram; "p3" 00 is the path's end)
//	e mp3 00 00 00 00 00                   → …
//	s 80 00 00 00 00 3d 09 00 00…07        → ""
//	t a "daf" 00 00 00 00, …               → …
//	v y 80 00 00 00 00 00 07 d1 00…07      → ""
//
// A query such as `punk ext:mp3 size:>1M` is planned by counting the
// candidates of each indexed term: the trigram lists of "punk" and the 'e'
// list of mp3 exactly (a few values per list), the 's' range above 1 MiB
// up to 1000 keys, then by its size on disk. When a block list is the
// cheapest, the lists of every term (up to 32, rarest first; ext:a,b is
// one union) are joined block by block: a block missing from one list is
// skipped in all, the others are ANDed as bitmaps. Otherwise the cheapest
// range is scanned. A wildcard's literals are trigrams, and its last one,
// unless it ends with *, is followed by the path's end mark (so *.mp3
// needs the trigram "p3" 00 too). Every candidate then goes through the exact filter of
// all terms, negated ones included, until n+1 hits are found.
//
// A session's receipts are the range ['c' wark, 'c' wark+1); all files
// with one content are the range ['f' wark, 'f' wark+1). Finishing an
// upload deletes its 'u' key and each of its 'c' keys (point deletes; no
// range tombstones, which every later iterator would have to fragment)
// and sets its 'f' key, in one synced batch.
package idx
