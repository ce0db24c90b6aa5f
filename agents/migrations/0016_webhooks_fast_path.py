from django.db import migrations

# The run-end trigger's function (0015_webhooks) with a fast path: a run with no endpoint
# (most runs) returns after three index probes, without the INSERT … SELECT
# (bench/webhook_trigger.py measures both).
FAST_SQL = """
CREATE OR REPLACE FUNCTION agents_run_end_webhooks() RETURNS trigger AS $$
DECLARE
    ev text := 'run.' || NEW.status;
BEGIN
    -- Most runs have no endpoint: three index probes, and no INSERT to plan or run.
    IF (NEW.webhook IS NULL OR NOT NEW.webhook->'events' ? ev)
        AND NOT EXISTS (SELECT 1 FROM agents_agentwebhook w WHERE w.agent_id = NEW.agent_id)
        AND NOT EXISTS (SELECT 1 FROM agents_pushconfig p WHERE p.run_id = NEW.id) THEN
        RETURN NULL;
    END IF;
    INSERT INTO agents_webhookdelivery (
        id, key, environment_id, run_id, agent_webhook_id, push_config_id, event, format,
        url, headers_encrypted, status, attempts, next_attempt_at, last_response,
        last_error, history, created_at
    )
    SELECT md5(e.key)::uuid, e.key,
        (SELECT a.environment_id FROM agents_agent a WHERE a.id = NEW.agent_id),
        NEW.id, e.agent_webhook_id, e.push_config_id, ev, e.format, e.url, e.headers,
        'pending', 0, now(), '', '', '[]'::jsonb, now()
    FROM (
        SELECT NEW.id::text || ':' || ev || ':request' AS key, NULL::uuid AS agent_webhook_id,
            NULL::uuid AS push_config_id, 'standard' AS format,
            NEW.webhook->>'url' AS url, '' AS headers
        WHERE NEW.webhook IS NOT NULL AND NEW.webhook->'events' ? ev
        UNION ALL
        SELECT NEW.id::text || ':' || ev || ':agent:' || w.id::text, w.id, NULL, 'standard', w.url, ''
        FROM agents_agentwebhook w
        WHERE w.agent_id = NEW.agent_id AND w.enabled AND ev = ANY(w.events)
        UNION ALL
        SELECT NEW.id::text || ':' || ev || ':push:' || p.id::text, NULL, p.id, p.dialect, p.url,
            p.headers_encrypted
        FROM agents_pushconfig p
        WHERE p.run_id = NEW.id
    ) e
    ON CONFLICT (key) DO NOTHING;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
"""
SLOW_SQL = """
CREATE OR REPLACE FUNCTION agents_run_end_webhooks() RETURNS trigger AS $$
DECLARE
    ev text := 'run.' || NEW.status;
BEGIN
    INSERT INTO agents_webhookdelivery (
        id, key, environment_id, run_id, agent_webhook_id, push_config_id, event, format,
        url, headers_encrypted, status, attempts, next_attempt_at, last_response,
        last_error, history, created_at
    )
    SELECT md5(e.key)::uuid, e.key,
        (SELECT a.environment_id FROM agents_agent a WHERE a.id = NEW.agent_id),
        NEW.id, e.agent_webhook_id, e.push_config_id, ev, e.format, e.url, e.headers,
        'pending', 0, now(), '', '', '[]'::jsonb, now()
    FROM (
        SELECT NEW.id::text || ':' || ev || ':request' AS key, NULL::uuid AS agent_webhook_id,
            NULL::uuid AS push_config_id, 'standard' AS format,
            NEW.webhook->>'url' AS url, '' AS headers
        WHERE NEW.webhook IS NOT NULL AND NEW.webhook->'events' ? ev
        UNION ALL
        SELECT NEW.id::text || ':' || ev || ':agent:' || w.id::text, w.id, NULL, 'standard', w.url, ''
        FROM agents_agentwebhook w
        WHERE w.agent_id = NEW.agent_id AND w.enabled AND ev = ANY(w.events)
        UNION ALL
        SELECT NEW.id::text || ':' || ev || ':push:' || p.id::text, NULL, p.id, p.dialect, p.url,
            p.headers_encrypted
        FROM agents_pushconfig p
        WHERE p.run_id = NEW.id
    ) e
    ON CONFLICT (key) DO NOTHING;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
"""


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0015_webhooks"),
    ]

    operations = [
        migrations.RunSQL(FAST_SQL, SLOW_SQL),
    ]
