import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The run events' NOTIFY once per run per statement instead of once per row: the ingest stores a run's waiting
 * messages (hundreds of streamed tokens) in one INSERT per transaction, and a notification per token would wake each
 * stream of the run once per token, each wake a read of the table. A statement-level trigger reads the inserted rows
 * from its transition table and sends, for each run, the highest seq stored (a stream only needs "there is more after
 * your seq").
 */
export class NotifyRunEventsPerStatement1764662400006 implements MigrationInterface {
  name = 'NotifyRunEventsPerStatement1764662400006';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE FUNCTION notify_agent_run_events() RETURNS trigger
        LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
        AS $$
        DECLARE stored_run record;
        BEGIN
          FOR stored_run IN SELECT run_id, max(seq) AS seq FROM stored_events GROUP BY run_id LOOP
            PERFORM pg_notify('agent_run_events', stored_run.run_id::text || ':' || stored_run.seq::text);
          END LOOP;
          RETURN NULL;
        END $$;
      DROP TRIGGER agent_run_events_notify ON agent_run_events;
      CREATE TRIGGER agent_run_events_notify AFTER INSERT ON agent_run_events
        REFERENCING NEW TABLE AS stored_events
        FOR EACH STATEMENT EXECUTE FUNCTION notify_agent_run_events();
      DROP FUNCTION notify_agent_run_event();
    `);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE FUNCTION notify_agent_run_event() RETURNS trigger
        LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
        AS $$ BEGIN PERFORM pg_notify('agent_run_events', NEW.run_id::text || ':' || NEW.seq::text); RETURN NULL; END $$;
      DROP TRIGGER agent_run_events_notify ON agent_run_events;
      CREATE TRIGGER agent_run_events_notify AFTER INSERT ON agent_run_events
        FOR EACH ROW EXECUTE FUNCTION notify_agent_run_event();
      DROP FUNCTION notify_agent_run_events();
    `);
  }
}
