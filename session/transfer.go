package session

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
)

// MaxImportBytes bounds the log Import reads (1 GiB, the largest frame a log may hold).
const MaxImportBytes = 1 << 30

// Export writes the stored events of session id — not the recovery events Load adds — as
// a plain session log: the header line, then one line per event, each exactly as a
// FileStore with CompressionNone writes it. Import reads it back into any Store.
func Export(ctx context.Context, st Store, id string, w io.Writer) error {
	l, err := st.Load(ctx, id)
	if err != nil {
		return err
	}
	line, err := EncodeHeader(l.Header)
	if err != nil {
		return fmt.Errorf("session: export %q: %w", id, err)
	}
	bw := bufio.NewWriter(w)
	bw.Write(line)
	bw.WriteByte('\n')
	buf := make([]byte, 0, 4096)
	for _, e := range l.Events[:len(l.Events)-l.Recovered] {
		if buf, err = appendEventJSON(buf[:0], &e); err != nil {
			return fmt.Errorf("session: export %q: %w", id, err)
		}
		buf = append(buf, '\n')
		if _, err := bw.Write(buf); err != nil {
			return fmt.Errorf("session: export %q: %w", id, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("session: export %q: %w", id, err)
	}
	return nil
}

// Import reads a session log — what Export writes, or a FileStore's log file, plain or
// zstd — and stores it in st with its header, seqs and times unchanged. A log with damage
// anywhere, a torn final record included, is refused as a *CorruptError, and so is an id
// st already holds (ErrExists); nothing is stored then.
func Import(ctx context.Context, st Store, r io.Reader) (Header, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxImportBytes+1))
	if err != nil {
		return Header{}, fmt.Errorf("session: import: read: %w", err)
	}
	if len(data) > MaxImportBytes {
		return Header{}, fmt.Errorf("session: import: the log is larger than %d bytes", MaxImportBytes)
	}
	c := CompressionNone
	if len(data) >= 4 && binary.LittleEndian.Uint32(data) == zstdMagic {
		c = CompressionZstd
	}
	sc, err := readLog(data, c)
	if err != nil {
		return Header{}, err
	}
	if torn := sc.tornBytes(len(data)); torn > 0 {
		return Header{}, &CorruptError{Offset: sc.committed, Err: fmt.Errorf("the log ends in %d bytes of a damaged or incomplete record", torn)}
	}
	if err := st.Import(ctx, sc.header, sc.events); err != nil {
		return Header{}, err
	}
	return sc.header, nil
}
