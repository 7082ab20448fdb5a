//! `memory_search` results with the `/memories` path of each note that is a file of the files
//! dialect, so that the model can go on with the `memory` tool.

use serde_json::Value;

/// Search results (`{"results": [{"note_id": ...}]}`) with the `path` of each note that is a
/// file of the `/memories` tree. Left as they are when paths cannot be read.
pub(crate) async fn with_paths(
    memory: &dyn memory::MemoryRetrieval,
    user: &types::UserId,
    results: String,
) -> String {
    let Some(store) = memory.files() else {
        return results;
    };
    let Ok(mut doc) = serde_json::from_str::<Value>(&results) else {
        return results;
    };
    let Some(items) = doc.get_mut("results").and_then(Value::as_array_mut) else {
        return results;
    };
    let ids: Vec<types::NoteId> = items
        .iter()
        .filter_map(|h| h.get("note_id")?.as_str())
        .filter_map(|id| types::NoteId::parse(id).ok())
        .collect();
    let paths = match store.files().paths_of(user, &ids).await {
        Ok(paths) if !paths.is_empty() => paths,
        Ok(_) => return results,
        Err(e) => {
            tracing::warn!(error = %e, "could not read the paths of memory files");
            return results;
        }
    };
    for item in items.iter_mut() {
        let id = item
            .get("note_id")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if let Some((_, path)) = paths.iter().find(|(n, _)| n.as_str() == id) {
            item["path"] = Value::String(path.clone());
        }
    }
    doc.to_string()
}
