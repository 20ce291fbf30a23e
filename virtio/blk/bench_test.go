package blk

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/govmm/govmm/virtio"
	"github.com/govmm/govmm/virtio/virtiotest"
)

const (
	benchImage = 32 << 20
	benchBlock = 4096
	benchDepth = 32 // requests in flight through the fake queue
)

func benchFile(b *testing.B) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "bench.img")
	buf := make([]byte, benchImage)
	for i := range buf {
		buf[i] = byte(i * 13)
	}
	if err := os.WriteFile(path, buf, 0o600); err != nil {
		b.Fatal(err)
	}
	return path
}

func randomSector(r *rand.Rand) uint64 {
	return uint64(r.IntN(benchImage/benchBlock)) * (benchBlock / sectorSize)
}

// BenchmarkRandRead4K compares 4 KiB random reads through the device
// (fake queue, device goroutine, benchDepth in flight), through its request
// handler alone (parse + preadv, no queue), and pread on the image itself,
// buffered and O_DIRECT. Buffers are page-aligned, as guest RAM is, so the
// device takes its O_DIRECT path when the filesystem has one.
func BenchmarkRandRead4K(b *testing.B) {
	path := benchFile(b)
	d := open(b, path, Options{Queues: 1})
	b.Logf("O_DIRECT: %v", d.Direct())
	mem := alignedBuf(b, benchDepth*benchBlock)

	b.Run("device", func(b *testing.B) {
		q := virtiotest.NewQueue()
		drv := &virtiotest.Driver{}
		if err := d.Activate(drv.Activation(0, q)); err != nil {
			b.Fatal(err)
		}
		defer d.Reset()
		r := rand.New(rand.NewPCG(1, 2))
		chains := make([]*virtio.Chain, benchDepth)
		hdrs := make([][]byte, benchDepth)
		status := make([]byte, benchDepth)
		for i := range chains {
			hdrs[i] = header(typeIn, 0)
			chains[i] = &virtio.Chain{
				Readable: [][]byte{hdrs[i]},
				Writable: [][]byte{mem[i*benchBlock : (i+1)*benchBlock], status[i : i+1]},
			}
		}
		b.SetBytes(benchBlock)
		b.ResetTimer()
		done := 0
		for done < b.N {
			n := min(benchDepth, b.N-done)
			for i := range n {
				putSector(hdrs[i], randomSector(r))
			}
			q.Add(chains[:n]...)
			if u := q.WaitUsed(done+n, wait); len(u) != done+n {
				b.Fatal("requests not completed")
			}
			done += n
		}
	})

	b.Run("handler", func(b *testing.B) {
		r := rand.New(rand.NewPCG(1, 2))
		hdr := header(typeIn, 0)
		status := []byte{0}
		c := &virtio.Chain{Readable: [][]byte{hdr}, Writable: [][]byte{mem[:benchBlock], status}}
		qc := &queueCounters{}
		b.SetBytes(benchBlock)
		for b.Loop() {
			putSector(hdr, randomSector(r))
			if _, err := d.serve(qc, c); err != nil || status[0] != statusOK {
				b.Fatal(err, status[0])
			}
		}
	})

	pread := func(flags int) func(b *testing.B) {
		return func(b *testing.B) {
			f, err := os.OpenFile(path, os.O_RDONLY|flags, 0)
			if err != nil {
				b.Skip(err)
			}
			defer f.Close()
			fd := int(f.Fd())
			r := rand.New(rand.NewPCG(1, 2))
			b.SetBytes(benchBlock)
			for b.Loop() {
				if _, err := unix.Pread(fd, mem[:benchBlock], int64(randomSector(r)*sectorSize)); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.Run("pread", pread(0))
	b.Run("pread-direct", pread(unix.O_DIRECT))
}

func putSector(hdr []byte, sector uint64) {
	for i := range 8 {
		hdr[8+i] = byte(sector >> (8 * i))
	}
}
