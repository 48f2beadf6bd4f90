-- The origins allowed to frame the room page (embedUrl): the organization's allowed-origins setting.
alter table organizations add column allowed_origins text[] not null default '{}';
