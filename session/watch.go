package session

import (
	"context"
	"fmt"
	"os"
)

// Activity is a cheap look at a session, for following it while it runs: whether a writer
// holds it and a mark that moves whenever events are stored.
type Activity struct {
	// Held reports that a writer has the session open now: a dsh process is running it.
	Held bool
	// Mark changes whenever events are stored (a log file's size, a database's event
	// count); it is only compared with an earlier Mark of the same session.
	Mark int64
}

// Watcher is implemented by stores that can tell a session's Activity without reading its
// events. The session viewer polls it to follow a live session and reloads the session
// only when the mark moved; FileStore and session/pgstore implement it.
type Watcher interface {
	// Activity returns the session's activity now (a full id; ErrNotFound when there is
	// no such session).
	Activity(ctx context.Context, id string) (Activity, error)
}

// Activity returns whether another process holds the session's log open for writing (the
// writer's advisory lock) and the log's size as its mark.
func (s *FileStore) Activity(ctx context.Context, id string) (Activity, error) {
	path, err := s.find(ctx, id)
	if err != nil {
		return Activity{}, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return Activity{}, fmt.Errorf("session: %w", err)
	}
	return Activity{Held: writerHolds(path), Mark: fi.Size()}, nil
}

var _ Watcher = (*FileStore)(nil)
