package gdalcmd_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/gdalcmd"
	"github.com/wfhq/wf/wftype"
)

// childOf returns the pid of a running process named name whose parent is
// this test process, 0 when there is none.
func childOf(t *testing.T, name string) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		if i < 0 || !strings.Contains(s[:i], "("+name) {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 && f[0] != "Z" && f[1] == strconv.Itoa(os.Getpid()) {
			return pid
		}
	}
	return 0
}

// TestCancelKillsGDAL: a GDAL command still running when its task is
// cancelled is killed (ogrinfo reading a stdin that never ends), and the
// error says GDAL was stopped, not that the source is bad.
func TestCancelKillsGDAL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts GDAL")
	}
	require.NoError(t, gdalcmd.Require("ogrinfo"))
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	defer pr.Close()
	defer pw.Close()
	ctx, cancel := context.WithCancelCause(context.Background())
	s := &gdalcmd.Staged{Dir: t.TempDir(), Path: "/vsistdin/", Shown: "stdin"}
	done := make(chan error, 1)
	go func() {
		_, err := gdalcmd.Output(ctx, s, pr, "ogrinfo", "-ro", "-so", "/vsistdin/")
		done <- err
	}()
	var pid int
	require.Eventually(t, func() bool { pid = childOf(t, "ogrinfo"); return pid != 0 }, 60*time.Second, 10*time.Millisecond)
	cancel(errors.New("the task was cancelled"))
	select {
	case err := <-done:
		require.ErrorContains(t, err, "GDAL was stopped: the task was cancelled")
		require.False(t, wftype.IsPermanent(err))
	case <-time.After(60 * time.Second):
		t.Fatal("ogrinfo was not stopped")
	}
	_, err = os.Stat("/proc/" + strconv.Itoa(pid))
	require.True(t, os.IsNotExist(err), "ogrinfo (pid %d) still exists", pid)
}

// TestExplain: GDAL's messages become words to act on, with wf's copy
// named as the user named the source.
func TestExplain(t *testing.T) {
	t.Parallel()
	err := gdalcmd.Explain("ERROR 4: `/tmp/wf-scratch/s/x/source.tif' not recognized as a supported file format.\n",
		"/tmp/wf-scratch/s/x/source.tif", "gs://b/dem.tif", errors.New("exit status 1"))
	require.True(t, wftype.IsPermanent(err))
	require.EqualError(t, err, "GDAL cannot read it: it is not in a format GDAL knows, or it is damaged (GDAL: `gs://b/dem.tif' not recognized as a supported file format.)")
	err = gdalcmd.Explain("FAILURE:\nUnable to open datasource `/vsizip//s/source.zip' with the following drivers.\n  -> GPKG\n  -> CSV\n",
		"/vsizip//s/source.zip", "roads.zip", errors.New("exit status 1"))
	require.EqualError(t, err, "GDAL cannot read it: it is not in a vector format GDAL knows, or it is damaged (GDAL: Unable to open datasource `roads.zip' with the following drivers.)")
	require.EqualError(t, gdalcmd.Explain("", "", "x", errors.New("exit status 3")), "GDAL: exit status 3")
}
