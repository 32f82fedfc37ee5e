// Package idx is hoard's Pebble database: one per volume, in the volume's
// state folder (<volume>/.hist/idx, or below --hist). It implements
// up2k.SessionStore, so unfinished uploads and the warks of finished ones
// survive restarts; the search issue will add the file index here.
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
// A session's receipts are the range ['c' wark, 'c' wark+1); all files
// with one content are the range ['f' wark, 'f' wark+1). Finishing an
// upload deletes its 'u' key and each of its 'c' keys (point deletes; no
// range tombstones, which every later iterator would have to fragment)
// and sets its 'f' key, in one synced batch.
package idx
