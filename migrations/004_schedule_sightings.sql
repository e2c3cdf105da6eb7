-- wf:database queue
-- wf schema, version 4: when each schedule was first seen.
--
-- A schedule's history starts when a leader first sees it, not before: a
-- schedule deployed today does not fire the ticks of the minutes before it.
-- The first sighting is recorded once, durably, so that a leader change or a
-- restart before the schedule's first tick neither loses that tick nor moves
-- the start (an `@every` schedule counts its ticks from here until it has
-- fired; then from its latest tick in tasks.schedule_ticks).
CREATE TABLE tasks.schedule_sightings (
    schedule_name varchar(255) PRIMARY KEY,
    first_seen    timestamptz  NOT NULL
);
