from django.urls import path

from . import views

app_name = "launches"
urlpatterns = [
    path("launch/", views.launch, name="launch"),
    path("launch/review/", views.review, name="review"),
    path("launches/", views.booking_list, name="list"),
    path("launches/<int:pk>/stop/", views.stop, name="stop"),
]
