package session

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/klauspost/compress/zstd"
)

// zstdMagic starts every Zstandard frame (little-endian 0xFD2FB528).
const zstdMagic = 0xFD2FB528

// maxBlockSize is the largest block a Zstandard frame may hold.
const maxBlockSize = 128 << 10

// maxDecodedFrame bounds the plaintext of one frame, so a hostile file cannot make the
// reader allocate without limit.
const maxDecodedFrame = 1 << 30

// errFrameTruncated reports a frame that the end of the data interrupts.
var errFrameTruncated = errors.New("frame is truncated")

// scanFrame walks the structure of the Zstandard frame starting at off without
// decompressing it and returns the offset just past it. dsh writes every frame with a
// content checksum and without a dictionary, so a frame without a checksum or with a
// dictionary id is malformed here.
func scanFrame(buf []byte, off int) (int, error) {
	rest := buf[off:]
	if len(rest) < 4 {
		return 0, errFrameTruncated
	}
	if binary.LittleEndian.Uint32(rest) != zstdMagic {
		return 0, errors.New("invalid frame magic")
	}
	p := 4
	if p >= len(rest) {
		return 0, errFrameTruncated
	}
	desc := rest[p]
	p++
	if desc&0x18 != 0 {
		return 0, errors.New("reserved frame-header bit set")
	}
	if desc&0x03 != 0 {
		return 0, errors.New("frame uses a dictionary")
	}
	if desc&0x04 == 0 {
		return 0, errors.New("frame has no content checksum")
	}
	single := desc&0x20 != 0
	fcsBytes := [4]int{0, 2, 4, 8}[desc>>6]
	if desc>>6 == 0 && single {
		fcsBytes = 1
	}
	hdr := fcsBytes
	if !single {
		hdr++ // window descriptor
	}
	if len(rest)-p < hdr {
		return 0, errFrameTruncated
	}
	p += hdr
	for {
		if len(rest)-p < 3 {
			return 0, errFrameTruncated
		}
		bh := uint32(rest[p]) | uint32(rest[p+1])<<8 | uint32(rest[p+2])<<16
		p += 3
		last := bh&1 != 0
		typ := bh >> 1 & 3
		size := int(bh >> 3)
		if typ == 3 {
			return 0, errors.New("reserved block type")
		}
		if size > maxBlockSize {
			return 0, fmt.Errorf("block size %d exceeds the maximum", size)
		}
		payload := size
		if typ == 1 { // RLE block: one byte repeated size times
			payload = 1
		}
		if len(rest)-p < payload {
			return 0, errFrameTruncated
		}
		p += payload
		if last {
			break
		}
	}
	if len(rest)-p < 4 {
		return 0, errFrameTruncated
	}
	return off + p + 4, nil
}

func newDecoder() (*zstd.Decoder, error) {
	return zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxMemory(maxDecodedFrame),
	)
}

// newEncoder returns the batch encoder: checksummed frames at the fastest level with the
// lower-memory option, because batches are small (one step's events) and an open log
// should not hold megabytes of encoder state (≈0.25 MB instead of ≈1.6 MB).
func newEncoder() (*zstd.Encoder, error) {
	return zstd.NewWriter(nil,
		zstd.WithEncoderConcurrency(1),
		zstd.WithEncoderCRC(true),
		zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithLowerEncoderMem(true),
	)
}

// decodeFrame decompresses the one frame occupying buf[start:end], verifying its checksum.
func decodeFrame(dec *zstd.Decoder, frame []byte) ([]byte, error) {
	return dec.DecodeAll(frame, nil)
}

// intactFrameAfter reports whether a structurally complete frame that decodes with a
// valid checksum starts anywhere at or after from. It tells damage in the middle of a
// log (an intact frame follows) from a torn tail (nothing intact follows).
func intactFrameAfter(dec *zstd.Decoder, buf []byte, from int) bool {
	var magic [4]byte
	binary.LittleEndian.PutUint32(magic[:], zstdMagic)
	for from < len(buf) {
		i := bytes.Index(buf[from:], magic[:])
		if i < 0 {
			return false
		}
		start := from + i
		if end, err := scanFrame(buf, start); err == nil {
			if _, err := decodeFrame(dec, buf[start:end]); err == nil {
				return true
			}
		}
		from = start + 1
	}
	return false
}
