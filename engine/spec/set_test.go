package spec

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/wftype"
)

func TestSetCapabilitiesAndRunners(t *testing.T) {
	t.Parallel()
	set := allKinds(t)

	runners := set.Runners()
	require.Len(t, runners, 2)
	gcp := runners[0]
	require.Equal(t, "gcp-cloudrun", gcp.Name())
	require.Equal(t, RunnerCloudRun, gcp.Type())
	require.Equal(t, 10, gcp.Priority())
	require.Equal(t, []string{"gcp_catalog_cleanup", "ingestion"}, gcp.TaskTypes())
	settings := gcp.CloudRun()
	require.Equal(t, CloudRunSettings{Project: "my-proj", Region: "europe-west1", Jobs: map[string]string{
		"ingestion": "ingest-job", "gcp_catalog_cleanup": "cleanup-job",
	}}, settings)
	settings.Jobs["noop"] = "x"
	require.NotContains(t, gcp.CloudRun().Jobs, "noop", "CloudRun returns a copy")

	c, ok := set.Capability(wftype.ModeAsync, "ingestion")
	require.True(t, ok)
	require.Equal(t, []RunnerRef{
		{Name: "gcp-cloudrun", Type: RunnerCloudRun, Priority: 10, Job: "ingest-job"},
		{Name: "gcp-fallback", Type: RunnerCloudRun, Priority: 20, Job: "ingest-job"},
		{Name: "background", Type: RunnerBackground, Priority: LocalRunnerPriority, Handler: HandlerBuiltin},
	}, c.Runners)
	c.Runners[0].Name = "changed"
	again, _ := set.Capability(wftype.ModeAsync, "ingestion")
	require.Equal(t, "gcp-cloudrun", again.Runners[0].Name, "Capability returns a copy")

	caps := set.Capabilities()
	require.Len(t, caps, 4)
	var pairs []string
	for _, c := range caps {
		pairs = append(pairs, string(c.Mode)+"/"+c.TaskType)
	}
	require.Equal(t, []string{
		"ASYNCHRONOUS/gcp_catalog_cleanup", "ASYNCHRONOUS/ingestion", "ASYNCHRONOUS/noop", "SYNCHRONOUS/preview",
	}, pairs)
	caps[0].Runners[0].Priority = 99
	require.Equal(t, 10, set.Capabilities()[0].Runners[0].Priority)
}

func TestSetListsAreCopies(t *testing.T) {
	t.Parallel()
	set := allKinds(t)
	tts := set.TaskTypes()
	require.Len(t, tts, 4)
	tts[0] = nil
	require.NotNil(t, set.TaskTypes()[0])
	files := set.Files()
	require.Equal(t, []string{"testdata/valid/all_kinds.yaml"}, files)
	files[0] = "x"
	require.Equal(t, "testdata/valid/all_kinds.yaml", set.Files()[0])
	subs := set.Subscriptions()
	subs[0] = nil
	require.NotNil(t, set.Subscriptions()[0])
	scheds := set.Schedules()
	scheds[0] = nil
	require.NotNil(t, set.Schedules()[0])
	h, _ := set.TaskType("gcp_catalog_cleanup")
	cmd := h.Handler().Exec.Command
	cmd[0] = "rm"
	require.Equal(t, "./scripts/cleanup.sh", h.Handler().Exec.Command[0])
	_, ok := set.TaskType("nope")
	require.False(t, ok)
}
