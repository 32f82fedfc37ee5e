package e2e

// The S3 leg of the suite (issue 21: "the existing upload, download,
// listing, archive, search and up2k tests run against an S3 volume too").
// TestS3Matrix re-runs the tests named in s3MatrixTests with every volume
// of theirs backed by a bucket of one shared MinIO:
//
//   - launch (harness_test.go) sees that the test runs below TestS3Matrix
//     and appends `:c,s3=matrix/vN` to each `-v SRC:...` line, giving each
//     SRC a prefix of its own; hoard gets the endpoint and keys in its
//     environment. Files the test put into SRC before the start are
//     copied into the bucket first (fixtures), so the test sees them served.
//   - The harness's on-disk accessors (writeFile, readFile, readVolumeFile,
//     wantFile, pathExists, fileHolds, tree, snapshot, wantUploaded) read
//     and write the bucket for a path below such a SRC (s3Path).
//
// A test that cannot pass on an S3 volume is skipped with its reason from
// ONE of the two lists below: s3NotBuilt (features not built on object
// storage yet: a helper that builds one deletes its tests' lines there,
// and TestS3Matrix then runs them) and s3DiskOnly (tests of things only a
// local folder has: work files, symlinks, sparse files, mtimes set from
// outside, file keys from inodes).
//
// `go test ./internal/e2e -run TestS3Matrix` runs the S3 leg alone;
// `-run 'TestS3Matrix/TestUp2k'` a part of it. Without a MinIO binary it
// skips, saying so (internal/miniotest).

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/minio/minio-go/v7"

	"hoard/internal/miniotest"
)

// s3MatrixTests are the tests the S3 leg runs again, by name.
var s3MatrixTests = map[string]func(*testing.T){
	// upload_test.go
	"TestUploadPutReplyForms":  TestUploadPutReplyForms,
	"TestUploadPutChecksums":   TestUploadPutChecksums,
	"TestUploadPutCompression": TestUploadPutCompression,
	"TestUploadPutReplace":     TestUploadPutReplace,
	"TestUploadPutCollision":   TestUploadPutCollision,
	"TestUploadPutAppend":      TestUploadPutAppend,
	"TestUploadPutRand":        TestUploadPutRand,
	"TestUploadPutLife":        TestUploadPutLife,
	"TestUploadPutLifeRestart": TestUploadPutLifeRestart,
	"TestUploadPutPaths":       TestUploadPutPaths,
	"TestUploadPutChunked":     TestUploadPutChunked,
	"TestUploadMultipart":      TestUploadMultipart,
	// upload_bad_test.go
	"TestUploadBadShortBody":  TestUploadBadShortBody,
	"TestUploadBadParams":     TestUploadBadParams,
	"TestUploadBadHeaders":    TestUploadBadHeaders,
	"TestUploadBadAuth":       TestUploadBadAuth,
	"TestUploadBadMultipart":  TestUploadBadMultipart,
	"TestUploadBadSizeLimits": TestUploadBadSizeLimits,
	// download_test.go
	"TestDownloadHeaders":         TestDownloadHeaders,
	"TestDownloadDisposition":     TestDownloadDisposition,
	"TestDownloadRanges":          TestDownloadRanges,
	"TestDownloadRangesEmptyFile": TestDownloadRangesEmptyFile,
	"TestDownloadConditional":     TestDownloadConditional,
	"TestDownloadMime":            TestDownloadMime,
	"TestDownloadUploadedActive":  TestDownloadUploadedActive,
	"TestDownloadNames":           TestDownloadNames,
	// listing_test.go
	"TestListingJSON":        TestListingJSON,
	"TestListingText":        TestListingText,
	"TestListingSymlinks":    TestListingSymlinks,
	"TestListingTree":        TestListingTree,
	"TestListingHTML":        TestListingHTML,
	"TestListingRedirect":    TestListingRedirect,
	"TestListingMounts":      TestListingMounts,
	"TestListingVirtualRoot": TestListingVirtualRoot,
	// archive_test.go, zip_test.go
	"TestArchiveEveryFormat":             TestArchiveEveryFormat,
	"TestArchiveSystemTools":             TestArchiveSystemTools,
	"TestArchiveCP437Names":              TestArchiveCP437Names,
	"TestArchiveZipHeadersByteByByte":    TestArchiveZipHeadersByteByByte,
	"TestArchiveZip64":                   TestArchiveZip64,
	"TestArchiveSelection":               TestArchiveSelection,
	"TestArchiveBadSelection":            TestArchiveBadSelection,
	"TestArchiveUnreadable":              TestArchiveUnreadable,
	"TestArchiveRules":                   TestArchiveRules,
	"TestArchiveModifierForms":           TestArchiveModifierForms,
	"TestArchiveCap":                     TestArchiveCap,
	"TestArchiveChangedFileCutsTransfer": TestArchiveChangedFileCutsTransfer,
	"TestZipListAndGet":                  TestZipListAndGet,
	"TestZipZip64":                       TestZipZip64,
	"TestZipPermissions":                 TestZipPermissions,
	"TestZipBadInput":                    TestZipBadInput,
	// perm_test.go
	"TestPermGetAndFileKeys": TestPermGetAndFileKeys,
	// search_test.go
	"TestSearchForms":              TestSearchForms,
	"TestSearchRP":                 TestSearchRP,
	"TestSearchBadInput":           TestSearchBadInput,
	"TestSearchOff":                TestSearchOff,
	"TestSearchPermissions":        TestSearchPermissions,
	"TestSearchHash":               TestSearchHash,
	"TestSearchTrunc":              TestSearchTrunc,
	"TestSearchRateLimit":          TestSearchRateLimit,
	"TestSearchFirstScan":          TestSearchFirstScan,
	"TestSearchFollows":            TestSearchFollows,
	"TestSearchRescan":             TestSearchRescan,
	"TestSearchTags":               TestSearchTags,
	"TestSearchTagsWithoutFFprobe": TestSearchTagsWithoutFFprobe,
	// up2k_test.go, up2k_hash_test.go, up2k_bad_test.go
	"TestUp2kShuffledParallel":          TestUp2kShuffledParallel,
	"TestUp2kStitchedAndSubchunks":      TestUp2kStitchedAndSubchunks,
	"TestUp2kCorruptAndDuplicateChunks": TestUp2kCorruptAndDuplicateChunks,
	"TestUp2kBusyChunk":                 TestUp2kBusyChunk,
	"TestUp2kTwoClients":                TestUp2kTwoClients,
	"TestUp2kSameContentElsewhere":      TestUp2kSameContentElsewhere,
	"TestUp2kCollisionAndReplace":       TestUp2kCollisionAndReplace,
	"TestUp2kKillAndResume":             TestUp2kKillAndResume,
	"TestUp2kEmptyFile":                 TestUp2kEmptyFile,
	"TestUp2kChunkSizeBoundaries":       TestUp2kChunkSizeBoundaries,
	"TestUp2kFileKeyAndSearch":          TestUp2kFileKeyAndSearch,
	"TestUp2kSingleHash":                TestUp2kSingleHash,
	"TestUp2kBadHandshakes":             TestUp2kBadHandshakes,
	"TestUp2kBadChunks":                 TestUp2kBadChunks,
	"TestUp2kUnfinishedCaps":            TestUp2kUnfinishedCaps,
	"TestUp2kHandshakeFlood":            TestUp2kHandshakeFlood,
	"TestUp2kDiskFull":                  TestUp2kDiskFull,
	// up2k_u2c_test.go (copyparty's u2c.py: HOARD_U2C), up_test.go (hoard up)
	"TestUp2kU2C":          TestUp2kU2C,
	"TestU2CSearchURLs":    TestU2CSearchURLs,
	"TestUpTree":           TestUpTree,
	"TestUpPlainOutput":    TestUpPlainOutput,
	"TestUpKilledResumes":  TestUpKilledResumes,
	"TestUpServerRestart":  TestUpServerRestart,
	"TestUpDeleteRemote":   TestUpDeleteRemote,
	"TestUpFlakyProxy":     TestUpFlakyProxy,
	"TestUpFileChanges":    TestUpFileChanges,
	"TestUpBadArgs":        TestUpBadArgs,
	"TestUpCopyparty":      TestUpCopyparty,
	"TestUpTLS":            TestUpTLS,
	"TestUpMemoryBounded":  TestUpMemoryBounded,
	"TestUpTouchOverwrite": TestUpTouchOverwrite,
	// archive_mounts_test.go
	"TestArchiveMounts":         TestArchiveMounts,
	"TestArchiveVirtualFolders": TestArchiveVirtualFolders,
}

// s3NotBuilt: tests of features not built on S3 volumes yet, with who
// builds them. THE one list: when a feature lands on S3, delete its
// tests' lines here (and run `go test ./internal/e2e -run TestS3Matrix`).
var s3NotBuilt = map[string]string{
	// Empty: every test of s3MatrixTests that is not disk-only runs on S3.
}

// s3DiskOnly: tests of what only a local folder has; they stay skipped.
var s3DiskOnly = map[string]string{
	"TestDownloadConditional/If-Modified-Since_later": mtimeSet,
	"TestListingText/ls=t":                            mtimeSet + "; a folder has none",

	"TestListingSymlinks":                "symlinks",
	"TestArchiveRules":                   "symlinks (its tree has a link inside)",
	"TestArchiveMounts":                  "a folder mounted twice, inside itself: the walk cuts the loop by folder identity (device, inode); the matrix gives each volume its own prefix",
	"TestSearchForms":                    mtimeSet + " (date: queries)",
	"TestUp2kDiskFull":                   "a full disk (free space of the volume's folder)",
	"TestUp2kHandshakeFlood":             "the free space of the volume's disk (an address may promise itself half of it); the caps by count run on S3 in TestUp2kUnfinishedCaps",
	"TestUpKilledResumes":                killedAccounting,
	"TestUpServerRestart":                killedAccounting,
	"TestArchiveZip64":                   "sparse files of 4 GiB and more",
	"TestZipZip64":                       "sparse files of 4 GiB and more",
	"TestArchiveUnreadable":              "files made unreadable with chmod",
	"TestArchiveChangedFileCutsTransfer": "a file changed on disk while it is sent",
}

// killedAccounting is why a test that counts each chunk acknowledged
// exactly once across a kill is disk-only.
const killedAccounting = "exact byte accounting of a killed upload: on S3 a chunk whose whole body arrived is kept though its answer never reached the client (the store's round trip widens that window)"

// mtimeSet is why a test of times set with os.Chtimes is disk-only.
const mtimeSet = "mtimes set from outside (an object's time is its LastModified)"

func TestS3Matrix(t *testing.T) {
	t.Parallel()
	m := miniotest.Start(t, s3MatrixBucket)
	s3Mx.mu.Lock()
	s3Mx.m = m
	s3Mx.mu.Unlock()
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range s3MatrixTests {
			if !yield(n) {
				return
			}
		}
	}) {
		t.Run(name, func(t *testing.T) {
			s3Gate(t)
			s3MatrixTests[name](t)
		})
	}
}

const s3MatrixBucket = "matrix"

// s3Gate skips t in the S3 leg when it or a test above it is on one of
// the two lists. Keys name a test or a subtest ("TestX/sub_name", as go
// test prints it); the harness checks at each request, so a subtest on a
// list is skipped at its first.
func s3Gate(t testing.TB) {
	t.Helper()
	name, ok := strings.CutPrefix(t.Name(), "TestS3Matrix/")
	if !ok {
		return
	}
	for n := name; ; {
		if why, ok := s3NotBuilt[n]; ok {
			t.Skipf("not built on S3 volumes yet: %s; delete %q from s3NotBuilt (s3matrix_test.go) when it is", why, n)
		}
		if why, ok := s3DiskOnly[n]; ok {
			t.Skipf("tests what only a local folder has: %s", why)
		}
		i := strings.LastIndexByte(n, '/')
		if i < 0 {
			return
		}
		n = n[:i]
	}
}

// s3Mx is the S3 leg's state: its MinIO and the volume folders whose
// content lives in the bucket (SRC → key prefix).
var s3Mx struct {
	mu   sync.Mutex
	m    *miniotest.Server
	vols map[string]string
	n    int
}

// onS3 says whether t runs in the S3 leg.
func onS3(t testing.TB) bool { return strings.HasPrefix(t.Name(), "TestS3Matrix/") }

// s3Rewrite gives each `-v SRC:...` of args a prefix of the matrix bucket
// (copying what SRC holds into it the first time), and returns the
// environment hoard reaches MinIO with.
func s3Rewrite(t testing.TB, args []string) ([]string, []string) {
	t.Helper()
	s3Mx.mu.Lock()
	m := s3Mx.m
	s3Mx.mu.Unlock()
	if m == nil {
		t.Fatal("test bug: the S3 leg runs without its MinIO")
	}
	out := slices.Clone(args)
	for i := 0; i+1 < len(out); i++ {
		if out[i] != "-v" {
			continue
		}
		src, rest, ok := strings.Cut(out[i+1], ":")
		if !ok || src == "" {
			continue
		}
		prefix := s3Register(t, m, src)
		out[i+1] = src + ":" + rest + ":c,s3=" + s3MatrixBucket + "/" + prefix
		i++
	}
	env := append(os.Environ(),
		"AWS_ACCESS_KEY_ID="+miniotest.User,
		"AWS_SECRET_ACCESS_KEY="+miniotest.Pass,
		"AWS_REGION=us-east-1",
		"AWS_ENDPOINT_URL="+m.Endpoint())
	return out, env
}

// s3Register gives the folder src its prefix, once, and copies the files
// in it (not .hist) into the bucket.
func s3Register(t testing.TB, m *miniotest.Server, src string) string {
	t.Helper()
	src = filepath.Clean(src)
	if !filepath.IsAbs(src) {
		t.Fatalf("test bug: the S3 leg needs absolute volume folders, got %q", src)
	}
	s3Mx.mu.Lock()
	if s3Mx.vols == nil {
		s3Mx.vols = map[string]string{}
	}
	prefix, ok := s3Mx.vols[src]
	if !ok {
		s3Mx.n++
		prefix = "v" + strconv.Itoa(s3Mx.n)
		s3Mx.vols[src] = prefix
	}
	s3Mx.mu.Unlock()
	if ok {
		return prefix
	}
	filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == src {
			return nil
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, src+string(filepath.Separator)))
		if d.IsDir() && d.Name() == ".hist" {
			return filepath.SkipDir
		}
		key := prefix + "/" + rel
		switch {
		case d.IsDir():
			if ents, _ := os.ReadDir(p); len(ents) == 0 {
				m.Put(t, s3MatrixBucket, key+"/", nil)
			}
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return nil // unreadable on purpose: not in the bucket either
			}
			m.Put(t, s3MatrixBucket, key, b)
		}
		return nil
	})
	return prefix
}

// s3Path finds the bucket key of the path p when p lies in a volume
// folder of the S3 leg: ok false means p is an ordinary path.
func s3Path(p string) (m *miniotest.Server, key string, ok bool) {
	p = filepath.Clean(p)
	s3Mx.mu.Lock()
	defer s3Mx.mu.Unlock()
	best := ""
	for src := range s3Mx.vols {
		if (p == src || strings.HasPrefix(p, src+string(filepath.Separator))) && len(src) > len(best) {
			best = src
		}
	}
	if best == "" {
		return nil, "", false
	}
	rel := filepath.ToSlash(strings.TrimPrefix(strings.TrimPrefix(p, best), string(filepath.Separator)))
	key = s3Mx.vols[best]
	if rel != "" {
		key += "/" + rel
	}
	return s3Mx.m, key, true
}

// s3Read returns the object's bytes; ok false when there is none.
func s3Read(m *miniotest.Server, key string) ([]byte, bool, error) {
	o, err := m.Client.GetObject(context.Background(), s3MatrixBucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, false, err
	}
	defer o.Close()
	b, err := io.ReadAll(o)
	if minio.ToErrorResponse(err).Code == "NoSuchKey" {
		return nil, false, nil
	}
	return b, err == nil, err
}

// s3Exists says whether key is an object or a folder (a key below it).
func s3Exists(m *miniotest.Server, key string) bool {
	if _, err := m.Client.StatObject(context.Background(), s3MatrixBucket, key, minio.StatObjectOptions{}); err == nil {
		return true
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for oi := range m.Client.ListObjects(ctx, s3MatrixBucket, minio.ListObjectsOptions{Prefix: key + "/", Recursive: true, MaxKeys: 1}) {
		return oi.Err == nil
	}
	return false
}

// s3Tree is tree for a folder in the bucket: every file and folder below
// key, relative, sorted (folders from the keys' paths and marker objects).
func s3Tree(t testing.TB, m *miniotest.Server, key string) []string {
	t.Helper()
	seen := map[string]bool{}
	for oi := range m.Client.ListObjects(context.Background(), s3MatrixBucket, minio.ListObjectsOptions{Prefix: key + "/", Recursive: true}) {
		if oi.Err != nil {
			t.Fatalf("listing %s: %v", key, oi.Err)
		}
		rel := strings.TrimSuffix(strings.TrimPrefix(oi.Key, key+"/"), "/")
		for d := rel; d != "." && d != ""; d = filepath.ToSlash(filepath.Dir(d)) {
			seen[d] = true
		}
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// s3Lmod is the mtime hoard keeps for an object (its hoard-lmod metadata,
// from up2k), else its LastModified.
func s3Lmod(m *miniotest.Server, key string) (int64, error) {
	oi, err := m.Client.StatObject(context.Background(), s3MatrixBucket, key, minio.StatObjectOptions{})
	if err != nil {
		return 0, err
	}
	for k, v := range oi.UserMetadata {
		if strings.EqualFold(k, "hoard-lmod") {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return oi.LastModified.Unix(), nil
}

// s3ChunkObjects counts the up2k chunk objects in the session area of the
// volume folder vol.
func s3ChunkObjects(t testing.TB, vol string) int {
	t.Helper()
	m, key, ok := s3Path(vol)
	if !ok {
		return 0
	}
	n := 0
	for oi := range m.Client.ListObjects(context.Background(), s3MatrixBucket, minio.ListObjectsOptions{Prefix: key + "/.hist/up2k/", Recursive: true}) {
		if oi.Err == nil && strings.Contains(oi.Key, "/c/") {
			n++
		}
	}
	return n
}

// s3Snapshot is snapshot's entry for rel below key.
func s3Snapshot(m *miniotest.Server, key string) string {
	if b, ok, _ := s3Read(m, key); ok {
		return snapshotEntry(b)
	}
	return "dir"
}

func snapshotEntry(b []byte) string {
	return fmt.Sprintf("%d bytes, sha256 %x", len(b), sha256.Sum256(b))
}
