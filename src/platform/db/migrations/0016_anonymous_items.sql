-- Anonymous polls and questions keep no one, and a meeting's snapshot keeps no more people than it needs
-- (docs/polls-and-questions.md, "Anonymity and erasure"). From now on the meeting actor writes them so;
-- this brings what was stored before in line. Running it again changes nothing.

-- An anonymous poll's responses: in the order of their content (chosen options, then text), each with the
-- poll's close as its time, so that neither their order nor their times can be lined up with who was in
-- the room when. (Two steps: seq is in the primary key, and the new numbers may take old ones.)
with keyed as (
  select r.poll_id, r.seq, coalesce(p.closed_at, r.responded_at) as closed_at, r.text,
    array(select x::int from jsonb_array_elements_text(r.choices) with ordinality as c(x, o) order by o) as picks
  from poll_responses r join polls p on p.id = r.poll_id
  where p.anonymous
), ranked as (
  select poll_id, seq, closed_at, row_number() over (partition by poll_id order by picks, text collate "C" nulls first, seq) as n
  from keyed
)
update poll_responses r set seq = -ranked.n, responded_at = ranked.closed_at
from ranked where r.poll_id = ranked.poll_id and r.seq = ranked.seq;
update poll_responses set seq = -seq - 1 where seq < 0;

-- The poll.closed events of anonymous polls still kept (the events feed, deliveries yet to go): the same.
update outbox set data = jsonb_set(data, '{responses}', (
  select coalesce(jsonb_agg(jsonb_set(r, '{respondedAt}', data->'closedAt') order by
      array(select x::int from jsonb_array_elements_text(r->'choices') with ordinality as c(x, o) order by o), r->>'text' collate "C" nulls first), '[]')
  from jsonb_array_elements(data->'responses') as r))
where type = 'poll.closed' and data->>'anonymous' = 'true' and jsonb_typeof(data->'responses') = 'array';

-- An ended or cancelled meeting's snapshot: no polls or questions (with their people); they are in their
-- tables, and an ended room refuses every command about them. Its participants left when it ended.
update actor_snapshots set snapshot = snapshot #- '{context,polls}' #- '{context,questions}'
where kind = 'meeting' and snapshot->'context'->>'status' in ('ENDED', 'CANCELLED')
  and (snapshot->'context' ? 'polls' or snapshot->'context' ? 'questions');

-- A running meeting's anonymous questions named their asker: no more. (That asker may now upvote it, and
-- does not see it as theirs: their voter key was never recorded.)
update actor_snapshots set snapshot = jsonb_set(snapshot, '{context,questions}', (
  select jsonb_agg(case when q->>'anonymous' = 'true' then jsonb_set(q, '{askedBy}', 'null') else q end order by i)
  from jsonb_array_elements(snapshot->'context'->'questions') with ordinality as e(q, i)))
where kind = 'meeting'
  and jsonb_path_exists(snapshot, '$.context.questions[*] ? (@.anonymous == true && @.askedBy != null)');

-- A running meeting's open anonymous poll kept each answer's voter (a user id), its time and the order
-- of arrival: now in the order of their content, without a time, and with a voter that names no one.
-- (Someone who answered it before may answer it once more; nothing can tell whose answer is whose.)
update actor_snapshots set snapshot = jsonb_set(snapshot, '{context,polls}', (
  select jsonb_agg(case when p->>'anonymous' = 'true' and p->>'status' = 'OPEN' then jsonb_set(p, '{answers}', (
      select coalesce(jsonb_agg(a || jsonb_build_object('voter', gen_random_uuid()::text, 'user', null, 'at', null) order by
          array(select x::int from jsonb_array_elements_text(a->'choices') with ordinality as c(x, o) order by o), a->>'text' collate "C" nulls first), '[]')
      from jsonb_array_elements(p->'answers') as a))
    else p end order by i)
  from jsonb_array_elements(snapshot->'context'->'polls') with ordinality as e(p, i)))
where kind = 'meeting'
  and jsonb_path_exists(snapshot, '$.context.polls[*] ? (@.anonymous == true && @.status == "OPEN").answers[*] ? (@.at != null)');
