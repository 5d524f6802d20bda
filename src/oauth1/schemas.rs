//! OpenAPI schemas of the OS-OAUTH1 bodies. Schema only.
#![allow(dead_code)]

use utoipa::ToSchema;

use crate::http::openapi::{CollectionLinks, SelfLink};

/// An OAuth1 consumer; other attributes given on create are kept and shown.
#[derive(ToSchema)]
pub struct Consumer {
    id: String,
    description: Option<String>,
    links: SelfLink,
}

/// The create response: the only time the secret is shown.
#[derive(ToSchema)]
pub struct ConsumerWithSecret {
    id: String,
    description: Option<String>,
    secret: String,
    links: SelfLink,
}

#[derive(ToSchema)]
pub struct ConsumerCreated {
    consumer: ConsumerWithSecret,
}

#[derive(ToSchema)]
pub struct ConsumerEnvelope {
    consumer: Consumer,
}

#[derive(ToSchema)]
pub struct ConsumerList {
    consumers: Vec<Consumer>,
    links: CollectionLinks,
}

#[derive(ToSchema)]
pub struct ConsumerBody {
    description: Option<String>,
}

#[derive(ToSchema)]
pub struct ConsumerRequest {
    consumer: ConsumerBody,
}
