package fs

import "syscall"

// ctimeOf returns the inode change time of st.
func ctimeOf(st *syscall.Stat_t) (sec, nsec int64) {
	return int64(st.Ctim.Sec), int64(st.Ctim.Nsec)
}
